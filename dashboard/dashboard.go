// Package dashboard serves fenceview's HTML dashboard: an overview of every
// resource with a live event feed, a page per resource with a chart of its
// tokens, and the rejection history with filters and a CSV export.
//
// Pages are templ components rendered on the server; web/static's script
// then keeps them live over the /v1/events websocket. The handlers read
// the lock authority through the domain's services (fenceview's
// ResourceService, MetricsService and HistoryService).
package dashboard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/web"
)

// Router is where the dashboard registers its routes (httpapi.Server and
// http.ServeMux both fit).
type Router interface {
	Handle(pattern string, h http.Handler)
}

// Handler serves the dashboard pages.
type Handler struct {
	Locks   fenceview.ResourceService
	Metrics fenceview.MetricsService
	History fenceview.HistoryService
	Now     func() time.Time // the service's clock, for lease countdowns
	Logger  *slog.Logger
	// Sessions, when set, log people in with a key (login.go). ClientAddr
	// is the address a login comes from, for the throttle (nil:
	// RemoteAddr).
	Sessions   Sessions
	ClientAddr func(*http.Request) string
	// Cluster, when set (cluster mode), gives the members and leader the
	// overview shows (cluster.go).
	Cluster func(context.Context) (ClusterView, error)
	// Keys, when set, names the keys that sources such as "key:<id>"
	// stand for (auth.Keyring implements it).
	Keys Keys
	// AdminWithoutAuth offers force-expire and reset on resource pages
	// when auth is off. Off by default: without auth every viewer would
	// get the buttons. With auth on, admin sessions always get them.
	AdminWithoutAuth bool

	// A burst of stale writes: at least BurstThreshold stale-token
	// rejections within BurstWindow raises a warning on every page.
	BurstThreshold int
	BurstWindow    time.Duration

	FeedSize    int // events in the overview's feed when the page loads
	TableSize   int // resources per page of the overview's table
	HistorySize int // events on a resource page (table and chart)
	PageSize    int // rejections per page when no limit is given
	CSVMax      int // rows in one CSV export

	// Gatherer, when set, feeds the readable metrics page (a Prometheus
	// registry).
	Gatherer prometheus.Gatherer

	assets map[string]asset
}

type asset struct {
	body  []byte
	etag  string
	ctype string
}

// New returns a handler with the default settings over the lock
// authority's live state (locks, metrics: internal/issuer) and its history
// (internal/sqlite).
func New(locks fenceview.ResourceService, metrics fenceview.MetricsService, history fenceview.HistoryService, now func() time.Time) *Handler {
	if now == nil {
		now = time.Now
	}
	h := &Handler{
		Locks: locks, Metrics: metrics, History: history, Now: now,
		Logger:         slog.New(slog.DiscardHandler),
		BurstThreshold: 5,
		BurstWindow:    time.Minute,
		FeedSize:       50,
		TableSize:      50,
		HistorySize:    200,
		PageSize:       50,
		CSVMax:         100_000,
		assets:         map[string]asset{},
	}
	fs.WalkDir(web.Static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(web.Static, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		h.assets["/"+p] = asset{body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: ctype}
		return nil
	})
	return h
}

// Register adds the dashboard's routes.
func (h *Handler) Register(r Router) {
	r.Handle("GET /{$}", http.HandlerFunc(h.overview))
	r.Handle("GET /resources/{resource}", http.HandlerFunc(h.resource))
	// Ids "." and ".." cannot travel as a path segment (browsers resolve
	// them), so links to them use a query instead.
	r.Handle("GET /resource", http.HandlerFunc(h.resource))
	r.Handle("GET /rejections", http.HandlerFunc(h.rejections))
	r.Handle("GET /rejections.csv", http.HandlerFunc(h.rejectionsCSV))
	r.Handle("GET /static/", http.HandlerFunc(h.static))
	r.Handle("GET /holders/{holder}", http.HandlerFunc(h.holder))
	r.Handle("GET /semaphores/{name}", http.HandlerFunc(h.semaphore))
	r.Handle("GET /semaphore", http.HandlerFunc(h.semaphore))
	r.Handle("GET /elections/{name}", http.HandlerFunc(h.election))
	r.Handle("GET /election", http.HandlerFunc(h.election))
	r.Handle("GET /status", http.HandlerFunc(h.metricsPage))
	r.Handle("GET /login", http.HandlerFunc(h.loginForm))
	r.Handle("POST /login", http.HandlerFunc(h.login))
	r.Handle("POST /logout", http.HandlerFunc(h.logout))
}

// assetURL is the URL of a static file with its content hash, so a new
// binary's script is never mixed with an old cached one.
func (h *Handler) assetURL(name string) string {
	a, ok := h.assets["/static/"+name]
	if !ok {
		return "/static/" + name
	}
	return "/static/" + name + "?v=" + strings.Trim(a.etag, `"`)
}

func (h *Handler) static(w http.ResponseWriter, r *http.Request) {
	a, ok := h.assets[r.URL.Path]
	if !ok {
		h.errorPage(w, r, http.StatusNotFound, "Not found", "There is no static file at "+r.URL.Path+".")
		return
	}
	w.Header().Set("Content-Type", a.ctype)
	w.Header().Set("ETag", a.etag)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("v") == strings.Trim(a.etag, `"`) {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// render writes a page with the headers every page carries. The content
// security policy allows nothing inline: the script and styles are files,
// so an id that slipped past escaping still could not run.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	templ.Handler(c, templ.WithStatus(status), templ.WithErrorHandler(func(r *http.Request, err error) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.Logger.Error("rendering dashboard page", "path", r.URL.Path, "err", err)
			http.Error(w, "internal error", http.StatusInternalServerError)
		})
	})).ServeHTTP(w, r)
}

func (h *Handler) errorPage(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	m := h.meta(r.Context(), title, "")
	h.render(w, r, status, ErrorPage(m, status, title, msg))
}

// meta gathers what every page's frame shows: the warnings.
func (h *Handler) meta(ctx context.Context, title, active string) Meta {
	m := Meta{
		Title:          title,
		Active:         active,
		CSS:            h.assetURL("app.css"),
		JS:             h.assetURL("app.js"),
		Icon:           h.assetURL("favicon.svg"),
		BurstThreshold: h.BurstThreshold,
		BurstWindowMs:  h.BurstWindow.Milliseconds(),
	}
	p := auth.FromContext(ctx)
	if p.KeyID != "" { // a key or the admin token, not auth.Open or auth.Anonymous
		m.User, m.UserKey = p.Name, p.KeyID
	}
	m.Admin = p.Allows(auth.Manage) && (p != auth.Open || h.AdminWithoutAuth)
	if p.SeesNothing() || !p.Allows(auth.Read) {
		return m // nobody known: no resource, no count
	}
	m.Metrics = p.Unrestricted() // the metrics count every resource
	m.Names = h.keyNames(p)
	// The alarmed resources only, from the issuer's set of them: no pass
	// over every resource per page view.
	m.Behind, _ = h.Locks.Alarmed(behindShown, p.Scope())
	if h.BurstThreshold > 0 && h.History != nil {
		stale, err := h.History.Rejections(ctx, fenceview.RejectionFilter{
			Reason: guard.ReasonStale, Since: h.Now().Add(-h.BurstWindow), Limit: h.BurstThreshold, Prefixes: p.Resources,
		})
		if err != nil {
			h.Logger.Error("counting recent stale writes", "err", err)
		} else if len(stale) >= h.BurstThreshold {
			m.Burst = len(stale)
		}
	}
	return m
}

// behindShown bounds the alarm banner's list.
const behindShown = 50

// behind reports whether guards have accepted tokens above the last one
// this issuer handed out: a database restored from an old copy, or another
// issuer granting for the same resource. The issuer keeps the alarm raised
// until an admin resets the counter, even after grants pass the mark.
func behind(r fenceview.Resource) bool {
	return r.CounterAlarm > 0 || (r.LastToken > 0 && r.HighWaterMark > r.LastToken)
}

// alarmMark is the token in use above the counter that makes a resource
// behind: the alarm's mark, or the recorded high-water mark. The banner
// and the resource page both show this one figure, beside the last token
// issued, and app.js computes it the same way.
func alarmMark(r fenceview.Resource) int64 {
	if r.LastToken > 0 && r.HighWaterMark > r.LastToken {
		return max(r.CounterAlarm, r.HighWaterMark)
	}
	return r.CounterAlarm
}
