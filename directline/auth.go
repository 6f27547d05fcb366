package directline

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// credential is who is calling: a secret (any conversation, no bound user) or a verified
// conversation token.
type credential struct {
	secret bool
	token  *claims
}

// user is the user id the credential binds ("" for secrets and unbound tokens).
func (c credential) user() string {
	if c.token == nil {
		return ""
	}
	return c.token.User
}

// allows checks that the credential may act on conversation conv: a token only on its own
// (ErrForbidden otherwise).
func (c credential) allows(conv string) error {
	if c.secret || c.token.Conv == conv {
		return nil
	}
	return ErrForbidden.Msg("the token is not valid for this conversation")
}

// authenticate reads "Authorization: Bearer <secret-or-token>" (Direct Line 3.0 authentication).
// Errors: ErrUnauthorized when the header is missing or not a Bearer credential; ErrTokenExpired
// when it is neither a secret nor a valid conversation token.
func (s *Server) authenticate(r *http.Request) (credential, error) {
	h := r.Header.Get("Authorization")
	scheme, value, ok := strings.Cut(strings.TrimSpace(h), " ")
	value = strings.TrimSpace(value)
	if !ok || !strings.EqualFold(scheme, "Bearer") || value == "" {
		return credential{}, ErrUnauthorized
	}
	if s.isSecret(value) {
		return credential{secret: true}, nil
	}
	c, err := s.tokens.verify(value, useConversation)
	if err != nil {
		return credential{}, err
	}
	return credential{token: c}, nil
}

// isSecret compares v with every configured secret in constant time.
func (s *Server) isSecret(v string) bool {
	found := 0
	for _, sec := range s.secrets {
		found |= subtle.ConstantTimeCompare([]byte(v), []byte(sec))
	}
	return found == 1
}

// requireSecret authenticates and accepts only a secret (token generation, log export).
func (s *Server) requireSecret(r *http.Request) error {
	cred, err := s.authenticate(r)
	if err != nil {
		return err
	}
	if !cred.secret {
		return ErrForbidden.Msg("this request needs the Direct Line secret")
	}
	return nil
}
