package dashboard

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fenceview/fenceview/internal/auth"
)

// Sessions logs people in (auth.Sessions implements it).
type Sessions interface {
	// Login starts a session for secret sent from client (auth.ClientOf
	// the request's address); too many attempts are an *auth.LimitError.
	Login(client, secret string) (string, *auth.Principal, error)
	Logout(id string)
	TTL() time.Duration
}

// maxLoginBody bounds the login form: a key is under 100 bytes.
const maxLoginBody = 4 << 10

// loginMeta is the frame of the login page: nothing about any resource, as
// the visitor is not known yet.
func (h *Handler) loginMeta() Meta {
	return Meta{Title: "Log in", CSS: h.assetURL("app.css"), JS: h.assetURL("app.js"), Icon: h.assetURL("favicon.svg")}
}

func (h *Handler) loginForm(w http.ResponseWriter, r *http.Request) {
	if h.Sessions == nil {
		h.render(w, r, http.StatusNotFound, LoginPage(h.loginMeta(), "/", "Auth is off on this server: there is nothing to log in to."))
		return
	}
	h.render(w, r, http.StatusOK, LoginPage(h.loginMeta(), safeNext(r.URL.Query().Get("next")), ""))
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if h.Sessions == nil {
		h.render(w, r, http.StatusNotFound, LoginPage(h.loginMeta(), "/", "Auth is off on this server: there is nothing to log in to."))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	if err := r.ParseForm(); err != nil {
		h.render(w, r, http.StatusBadRequest, LoginPage(h.loginMeta(), "/", "The form could not be read."))
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	addr := r.RemoteAddr
	if h.ClientAddr != nil {
		addr = h.ClientAddr(r)
	}
	id, _, err := h.Sessions.Login(auth.ClientOf(addr), strings.TrimSpace(r.PostForm.Get("key")))
	var limited *auth.LimitError
	if errors.As(err, &limited) {
		w.Header().Set("Retry-After", strconv.Itoa(int(limited.RetryAfter.Seconds())))
		h.render(w, r, http.StatusTooManyRequests, LoginPage(h.loginMeta(), next, "Too many logins; try again in "+limited.RetryAfter.String()+"."))
		return
	}
	if err != nil {
		h.render(w, r, http.StatusUnauthorized, LoginPage(h.loginMeta(), next, "That key is unknown or revoked."))
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: auth.SessionCookie, Value: id, Path: "/",
		MaxAge: int(h.Sessions.TTL().Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(auth.SessionCookie); err == nil && h.Sessions != nil {
		h.Sessions.Logout(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps the after-login redirect on this server: a path that
// starts with one "/" followed by neither "/" nor "\\" (both make "//host",
// another site), and holds no control or whitespace character anywhere
// (browsers drop tabs and newlines, so "/\t/evil.example" is "//evil.example").
// Anything else goes to the overview.
func safeNext(next string) string {
	if next == "/" {
		return next
	}
	if len(next) < 2 || next[0] != '/' || next[1] == '/' || next[1] == '\\' {
		return "/"
	}
	for _, r := range next {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) {
			return "/"
		}
	}
	return next
}
