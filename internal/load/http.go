package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// HTTP drives a fenceview server through its JSON API.
type HTTP struct {
	// Key, when set, is sent as "Authorization: Bearer <Key>" (a client key
	// for a server with auth on).
	Key   string
	base  string
	tr    *http.Transport
	setup Setup
	// Parsed once: a request reuses them instead of parsing a URL each time.
	acquire, release, fence []*url.URL
}

func (h *HTTP) header() http.Header {
	hd := http.Header{"Content-Type": {"application/json"}}
	if h.Key != "" {
		hd.Set("Authorization", "Bearer "+h.Key)
	}
	return hd
}

// NewHTTP returns a driver for the server at base (http://host:port).
func NewHTTP(base string) (*HTTP, error) {
	base = strings.TrimRight(base, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: want http://host:port", base)
	}
	return &HTTP{base: base}, nil
}

func (h *HTTP) Name() string { return "fenceview" }

func (h *HTTP) Prepare(ctx context.Context, s Setup) error {
	h.setup = s
	if h.tr != nil {
		h.tr.CloseIdleConnections() // a new run, a new set of connections
	}
	// One transport for every client, with an idle connection for each, so
	// that every operation reuses a keep-alive connection.
	h.tr = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * s.Clients,
		MaxIdleConnsPerHost: 2 * s.Clients,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	n := len(s.Resources)
	h.acquire, h.release, h.fence = make([]*url.URL, n), make([]*url.URL, n), make([]*url.URL, n)
	for i, r := range s.Resources {
		seg := url.PathEscape(r)
		var err error
		if h.acquire[i], err = url.Parse(h.base + "/v1/locks/" + seg + "/acquire"); err != nil {
			return err
		}
		h.release[i], _ = url.Parse(h.base + "/v1/locks/" + seg + "/release")
		h.fence[i], _ = url.Parse(h.base + "/v1/fence/" + seg)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", h.base+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := h.tr.RoundTrip(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET /healthz: %s", resp.Status)
	}
	return nil
}

func (h *HTTP) NewClient(id int, holder string) (Client, error) {
	hb, _ := json.Marshal(holder)
	c := &httpClient{
		h:       h,
		acquire: []byte(fmt.Sprintf(`{"holder":%s,"leaseMs":%d,"waitMs":%d}`, hb, h.setup.Lease.Milliseconds(), h.setup.Wait.Milliseconds())),
		release: []byte(fmt.Sprintf(`{"holder":%s}`, hb)),
		header:  h.header(),
		buf:     make([]byte, 0, 4096),
	}
	return c, nil
}

func (h *HTTP) Close() error {
	if h.tr != nil {
		h.tr.CloseIdleConnections()
	}
	return nil
}

type httpClient struct {
	h                *HTTP
	acquire, release []byte
	fenceBody        []byte
	header           http.Header
	buf              []byte
	tmpl             *http.Request
}

// body is a request body in one allocation.
type body struct{ bytes.Reader }

func (*body) Close() error { return nil }

// do sends one POST and reads the whole response into c.buf. The request
// is built by hand around a pre-parsed URL: no URL parsing, no JSON
// encoding, one header map per client.
func (c *httpClient) do(ctx context.Context, u *url.URL, payload []byte) (int, error) {
	if c.tmpl == nil || c.tmpl.Context() != ctx {
		c.tmpl, _ = http.NewRequestWithContext(ctx, "POST", c.h.base, nil)
		c.tmpl.Header = c.header
	}
	// A shallow copy of the template keeps its context without the second
	// copy WithContext would make.
	req := new(http.Request)
	*req = *c.tmpl
	b := &body{}
	b.Reset(payload)
	req.URL, req.Host, req.Body, req.ContentLength = u, u.Host, b, int64(len(payload))
	resp, err := c.h.tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	c.buf = c.buf[:0]
	for {
		if len(c.buf) == cap(c.buf) {
			c.buf = append(c.buf, 0)[:len(c.buf)]
		}
		n, err := resp.Body.Read(c.buf[len(c.buf):cap(c.buf)])
		c.buf = c.buf[:len(c.buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			resp.Body.Close()
			return 0, err
		}
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (c *httpClient) status(op string, code int) error {
	return &StatusError{Op: op, Code: code, Body: strings.TrimSpace(string(c.buf))}
}

func (c *httpClient) Acquire(ctx context.Context, r int) (int64, error) {
	code, err := c.do(ctx, c.h.acquire[r], c.acquire)
	if err != nil {
		return 0, err
	}
	switch code {
	case 200:
		tok, ok := numberAfter(c.buf, `"token":`)
		if !ok {
			return 0, fmt.Errorf("acquire: no token in %q", c.buf)
		}
		return tok, nil
	case 409:
		return 0, ErrBusy
	}
	return 0, c.status("acquire", code)
}

func (c *httpClient) Release(ctx context.Context, r int) error {
	code, err := c.do(ctx, c.h.release[r], c.release)
	if err != nil {
		return err
	}
	if code != 200 {
		return c.status("release", code)
	}
	return nil
}

func (c *httpClient) Fence(ctx context.Context, r int, token int64) (bool, error) {
	c.fenceBody = append(strconv.AppendInt(append(c.fenceBody[:0], `{"token":`...), token, 10), '}')
	code, err := c.do(ctx, c.h.fence[r], c.fenceBody)
	if err != nil {
		return false, err
	}
	switch code {
	case 200:
		return true, nil
	case 409:
		return false, nil
	}
	return false, c.status("fence", code)
}

// numberAfter parses the non-negative integer following key in b, a
// grant's JSON, without decoding the whole document.
func numberAfter(b []byte, key string) (int64, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, false
	}
	b = b[i+len(key):]
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	var n int64
	digits := 0
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			break
		}
		n = n*10 + int64(ch-'0')
		digits++
	}
	return n, digits > 0 && digits <= 19
}
