// Package sasl reads and answers SASL mechanism messages for the identity filters, without I/O:
//
//   - parsers of what a client sends first: PLAIN (RFC 4616), SCRAM client-first and
//     client-final (RFC 5802), the OAUTHBEARER initial response (RFC 7628), and an unverified
//     read of a JWT's claims (the broker, or another filter, verifies the token);
//   - ScramServer, the server side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677)
//     over a credential lookup, with phantom challenges for users it does not know;
//   - the credential store file of salted SCRAM credentials (never passwords).
//
// Every parser bounds what it reads (MaxScramMessageBytes, MaxTokenBytes) and keeps no password:
// PLAIN's is skipped over, SCRAM's proof checked and dropped. Errors name what is wrong with a
// message, never a secret in it.
package sasl
