package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafkalink/kafkalink/proxy/config"
)

// maxSASLRounds bounds a SCRAM exchange (two rounds) against a broker that never finishes it.
const maxSASLRounds = 4

// authenticate runs SaslHandshake v1 and SaslAuthenticate v1 as the discovery credential on a
// connection of the proxy's own, starting at correlation id corr, and returns the next free id.
// The credential's files are read now, so a rotated Secret applies at the next discovery.
func authenticate(ctx context.Context, c net.Conn, br *bufio.Reader, f *kmsg.RequestFormatter, d *config.DiscoveryCredential, corr, maxFrame int32) (int32, error) {
	mech, err := discoveryMechanism(d)
	if err != nil {
		return corr, err
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = mech.Name()
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	if err := roundTrip(c, br, f, hs, hsResp, corr, maxFrame); err != nil {
		return corr, fmt.Errorf("SaslHandshake: %w", err)
	}
	corr++
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return corr, fmt.Errorf("SaslHandshake: %w (the broker offers %s)", err, strings.Join(hsResp.SupportedMechanisms, ", "))
	}
	host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	session, msg, err := mech.Authenticate(ctx, host)
	if err != nil {
		return corr, err
	}
	for range maxSASLRounds {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(1)
		req.SASLAuthBytes = msg
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		if err := roundTrip(c, br, f, req, resp, corr, maxFrame); err != nil {
			return corr, fmt.Errorf("SaslAuthenticate: %w", err)
		}
		corr++
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			detail := ""
			if resp.ErrorMessage != nil {
				detail = ": " + *resp.ErrorMessage
			}
			return corr, fmt.Errorf("SaslAuthenticate: %w%s", err, detail)
		}
		done, next, err := session.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return corr, err
		}
		if done {
			return corr, nil
		}
		msg = next
	}
	return corr, fmt.Errorf("SASL did not finish in %d rounds", maxSASLRounds)
}

// discoveryMechanism builds the SCRAM mechanism of a credential from its files.
func discoveryMechanism(d *config.DiscoveryCredential) (sasl.Mechanism, error) {
	user := d.Username
	if d.UsernameFile != "" {
		b, err := os.ReadFile(d.UsernameFile)
		if err != nil {
			return nil, err
		}
		user = strings.TrimSpace(string(b))
	}
	pass, err := os.ReadFile(d.PasswordFile)
	if err != nil {
		return nil, err
	}
	auth := scram.Auth{User: user, Pass: strings.TrimRight(string(pass), "\r\n")}
	switch d.Mechanism {
	case config.MechanismScramSHA256:
		return auth.AsSha256Mechanism(), nil
	case config.MechanismScramSHA512:
		return auth.AsSha512Mechanism(), nil
	}
	return nil, errors.New("unknown mechanism " + d.Mechanism)
}
