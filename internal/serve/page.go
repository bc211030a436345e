package serve

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
)

// templates holds the pages' templates and their style sheet, which every page inlines: a
// page fetches nothing.
//
//go:embed templates
var templates embed.FS

// jsonKey marks a request for a page's JSON form in its context.
type jsonKey struct{}

// withFormat reads which form r asks for: a path ending in ".json" (the suffix is taken off
// for routing), or an Accept header that asks for JSON rather than HTML.
func withFormat(r *http.Request) *http.Request {
	asJSON := false
	if p, ok := strings.CutSuffix(r.URL.Path, ".json"); ok {
		asJSON = true
		if p == "" {
			p = "/"
		}
		r = r.Clone(r.Context())
		r.URL.Path, r.URL.RawPath = p, ""
	}
	accept := r.Header.Get("Accept")
	if strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html") {
		asJSON = true
	}
	return r.WithContext(context.WithValue(r.Context(), jsonKey{}, asJSON))
}

// wantsJSON says whether r asked for the JSON form of its page.
func wantsJSON(r *http.Request) bool {
	v, _ := r.Context().Value(jsonKey{}).(bool)
	return v
}

// jsonURL is the address of the JSON form of the page r asked for.
func jsonURL(r *http.Request) string {
	p := r.URL.Path
	if p == "/" {
		p = "/runs"
	}
	u := p + ".json"
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	return u
}

// pageNames are the pages, each templates/NAME.html defining "content".
func pageNames() []string {
	return []string{"runs", "samples", "compare", "history", "flamegraph", "error"}
}

// pageSet is every page's template, parsed once, and the style sheet they inline.
type pageSet struct {
	byName map[string]*template.Template
	style  template.CSS
}

// parsePages parses the embedded templates; they are part of the binary, so an error is a
// bug, which the package's tests catch.
func parsePages() pageSet {
	style, err := templates.ReadFile("templates/style.css")
	if err != nil {
		panic(err)
	}
	p := pageSet{byName: map[string]*template.Template{}, style: template.CSS(style)} //nolint:gosec // our own style sheet
	for _, name := range pageNames() {
		p.byName[name] = template.Must(template.New(name).ParseFS(templates, "templates/layout.html", "templates/"+name+".html"))
	}
	return p
}

// layout is the data of every page: its title, the style sheet, the link to its JSON form
// and the page's own data.
type layout struct {
	Title string
	Style template.CSS
	JSON  string
	Page  any
}

// render writes the page name with data, through the layout, or v as JSON where r asks for
// it. The page is rendered whole before anything is written, so that an error becomes an
// error page rather than half a page.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data, v any) {
	if wantsJSON(r) {
		writeJSON(w, status, v)
		return
	}
	var b bytes.Buffer
	l := layout{Title: title, Style: s.pages.style, Page: data}
	if name != "error" {
		l.JSON = jsonURL(r)
	}
	if err := s.pages.byName[name].ExecuteTemplate(&b, "layout.html", l); err != nil {
		s.internal(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = b.WriteTo(w)
}

// writeJSON writes v as indented JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, "encode JSON: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// errorPage is the data of the error page, and its JSON form.
type errorPage struct {
	Status  int    `json:"status"`
	Title   string `json:"title"`
	Message string `json:"error"`
	// Links are where to go from here (the profiled cells of a run, for one); none mostly.
	Links []link `json:"links,omitempty"`
	// Login shows the login form (a 401).
	Login bool `json:"-"`
}

// link is a link of a page.
type link struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// fail writes an error page with status: a title and what went wrong.
func (s *server) fail(w http.ResponseWriter, r *http.Request, status int, title, msg string, links ...link) {
	p := errorPage{Status: status, Title: title, Message: msg, Links: links}
	s.render(w, r, status, "error", title, p, p)
}

// unauthorized writes a 401: the login form, or a JSON error.
func (s *server) unauthorized(w http.ResponseWriter, r *http.Request, msg string) {
	if msg == "" {
		msg = "This server needs its token: log in below, or send it as Authorization: Bearer TOKEN."
	}
	p := errorPage{Status: http.StatusUnauthorized, Title: "Token required", Message: msg, Login: true}
	w.Header().Set("WWW-Authenticate", `Bearer realm="cnibench"`)
	s.render(w, r, http.StatusUnauthorized, "error", p.Title, p, p)
}

// storeFailed writes the page of an error reading the store: 503 where the store could not
// be read (it may come back: a PostgreSQL server restarting), 500 otherwise.
func (s *server) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	var ue *unavailableError
	if errors.As(err, &ue) {
		w.Header().Set("Retry-After", "10")
		s.fail(w, r, http.StatusServiceUnavailable, "The results store cannot be read",
			fmt.Sprintf("The results store %s did not answer: %v. This page works again once the store is back; reload it then.", s.where, err))
		return
	}
	s.fail(w, r, http.StatusInternalServerError, "Internal error", err.Error())
}

// badRequest writes a 400 naming the query parameter that is wrong.
func (s *server) badRequest(w http.ResponseWriter, r *http.Request, param string, err error) {
	s.fail(w, r, http.StatusBadRequest, "Bad request", fmt.Sprintf("%s: %v", param, err))
}

// internal writes a plain 500: the page itself could not be made.
func (s *server) internal(w http.ResponseWriter, err error) {
	http.Error(w, "internal error: "+err.Error(), http.StatusInternalServerError)
}
