package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// cookieName is the cookie the login form sets (cookieOf).
const cookieName = "cnibench_token"

// cookieOf is the login cookie's value for a token: a hash of it, which holds only the
// characters a cookie may, whatever the token file holds.
func cookieOf(token string) string {
	sum := sha256.Sum256([]byte("cnibench serve login\x00" + token))
	return hex.EncodeToString(sum[:])
}

// allowed says whether r carries the token, as a bearer token or the login cookie; every
// request is, without one.
func (s *server) allowed(r *http.Request) bool {
	if s.token == "" {
		return true
	}
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.matches(bearer) {
		return true
	}
	c, err := r.Cookie(cookieName)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(cookieOf(s.token))) == 1
}

// matches compares a presented token in constant time.
func (s *server) matches(token string) bool {
	return subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) == 1
}

// loginForm shows the login form, or sends a request that needs none to the runs.
func (s *server) loginForm(w http.ResponseWriter, r *http.Request) {
	if s.allowed(r) {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	p := errorPage{Status: http.StatusOK, Title: "Log in", Message: "This server needs its token (the contents of its --token-file).", Login: true}
	s.render(w, r, http.StatusOK, "error", p.Title, p, p)
}

// login checks the token posted by the form and, where it matches, sets it as a cookie that
// the browser sends with every later request (HttpOnly, SameSite strict, Secure over HTTPS).
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if s.token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil || !s.matches(r.PostForm.Get("token")) {
		s.unauthorized(w, r, "The token does not match this server's.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: cookieOf(s.token), Path: "/", HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
