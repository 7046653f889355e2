package strimzi

// OAuthListener is what kafkalink reads of an oauth listener's authentication (Strimzi before
// 1.0; 1.x configures OAuth as custom authentication, which kafkalink does not bind).
type OAuthListener struct {
	// TokenEndpointURI is authentication.tokenEndpointUri, where clients get tokens; empty when
	// the listener does not say.
	TokenEndpointURI string
	// ValidIssuerURI is authentication.validIssuerUri.
	ValidIssuerURI string
	// OAuthBearer is authentication.enableOauthBearer (true by default): the listener takes the
	// OAUTHBEARER mechanism.
	OAuthBearer bool
}

// parseOAuth reads an oauth listener's authentication settings; nil for other listeners.
func parseOAuth(m map[string]any, path string) (*OAuthListener, error) {
	auth, err := optMap(m, "authentication", path+".authentication")
	if err != nil || auth == nil {
		return nil, err
	}
	if t, _ := auth["type"].(string); t != string(ListenerAuthOAuth) {
		return nil, nil
	}
	o := &OAuthListener{}
	p := path + ".authentication"
	if o.TokenEndpointURI, err = optString(auth, "tokenEndpointUri", p+".tokenEndpointUri"); err != nil {
		return nil, err
	}
	if o.ValidIssuerURI, err = optString(auth, "validIssuerUri", p+".validIssuerUri"); err != nil {
		return nil, err
	}
	if o.OAuthBearer, err = optBool(auth, "enableOauthBearer", true, p+".enableOauthBearer"); err != nil {
		return nil, err
	}
	return o, nil
}
