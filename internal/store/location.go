package store

import (
	"net/url"
	"strings"
)

// isScheme tells whether s is a URL scheme (RFC 3986) rather than the start of a path.
func isScheme(s string) bool {
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	return s != ""
}

// passwordMask replaces a password in a location shown to the user.
const passwordMask = "xxxxx"

// redactLocation is location fit to print: for a URL ("scheme://..."), the userinfo password
// and the value of every query parameter whose name contains "password" (password,
// sslpassword) are replaced by passwordMask. A path is returned as it is.
//
// It follows the structure libpq and pgx give a URL rather than RFC 3986, since a URL that
// net/url rejects (several hosts, an unencoded character in the password) can still be one
// pgx accepts: the userinfo ends at an "@" that comes before any "/", and its password is
// what follows its first ":". When in doubt it masks too much rather than too little.
//
// Never printing a password is the point, so every doubtful case masks: an "@" left over
// after the userinfo may end a password that an unencoded "/" cut loose from it
// (postgres://user:pass/word@host, which pgx reads as host "user", port "pass", database
// "word@host") or that held an unencoded "@" itself (user:p@ss@host), and an unencoded "&"
// in a password query value would leave its tail looking like another parameter.
func redactLocation(location string) string {
	scheme, p, ok := strings.Cut(location, "://")
	if !ok || !isScheme(scheme) {
		return location
	}
	var b strings.Builder
	b.WriteString(scheme + "://")
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		user, _, hasPassword := strings.Cut(p[:i], ":")
		b.WriteString(user)
		if hasPassword {
			b.WriteString(":" + passwordMask)
		}
		b.WriteByte('@')
		p = p[i+1:]
	}
	// Whatever is left before the last "@" may be (the rest of) a password.
	if at := strings.LastIndexByte(p, '@'); at >= 0 {
		p = passwordMask + p[at:]
	}
	path, query, hasQuery := strings.Cut(p, "?")
	b.WriteString(path)
	if !hasQuery {
		return b.String()
	}
	b.WriteByte('?')
	params := strings.Split(query, "&")
	for i, param := range params {
		key, _, hasValue := strings.Cut(param, "=")
		name, err := url.QueryUnescape(key)
		if err != nil {
			name = key
		}
		if hasValue && strings.Contains(strings.ToLower(name), "password") {
			// Whatever follows may be the rest of the password.
			params = append(params[:i], key+"="+passwordMask)
			break
		}
	}
	b.WriteString(strings.Join(params, "&"))
	return b.String()
}
