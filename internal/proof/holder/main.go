// Command holder is a lock holder run as its own process by fenceview's
// pause tests, so that a real SIGSTOP can freeze it with its lease, its
// watchdog and its token inside.
//
// It takes the lock with the Go client's Mutex.Lock (the watchdog renews the
// lease), prints one JSON line {"event":"locked","token":N}, then obeys one
// command per line on stdin, answering each with one JSON line on stdout:
//
//	write <value>  write with the token Lock returned, whatever happened since
//	               (the fence endpoint, or the plugin's PUT /kv/{resource})
//	check          is the lease still ours, as far as the watchdog knows
//	wait-lost      block until the watchdog gives the lease up; print why
//	unlock         release the lock
//
// Writing with the remembered token, not with Mutex.Token, is the point: a
// process frozen between checking its lease and writing does exactly that.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fenceview/fenceview/client"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		os.Exit(1)
	}
}

// reply is one line of output.
type reply struct {
	Event    string `json:"event"`
	Token    int64  `json:"token,omitempty"`
	Status   int    `json:"status,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Required int64  `json:"required,omitempty"`
	Live     bool   `json:"live,omitempty"`
	Cause    string `json:"cause,omitempty"`
	Error    string `json:"error,omitempty"`
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("holder", flag.ContinueOnError)
	server := fs.String("server", "", "fenceview server URL")
	plugin := fs.String("plugin", "", "wasmplugin URL: write to its PUT /kv/{resource} instead of the fence endpoint")
	resource := fs.String("resource", "", "resource to lock and write")
	holder := fs.String("holder", "", "holder id")
	lease := fs.Duration("lease", time.Second, "lease the watchdog renews")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := client.New(client.Config{URL: *server, Lease: *lease})
	if err != nil {
		return err
	}
	m := c.Mutex(*resource, *holder)
	out := json.NewEncoder(stdout)
	ctx := context.Background()

	token, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	out.Encode(reply{Event: "locked", Token: token})

	hc := &http.Client{Timeout: 30 * time.Second}
	in := bufio.NewScanner(stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "write":
			r, err := write(hc, *server, *plugin, *resource, *holder, token, arg)
			if err != nil {
				r = reply{Error: err.Error()}
			}
			r.Event = "wrote"
			out.Encode(r)
		case "check":
			out.Encode(reply{Event: "checked", Live: m.Context().Err() == nil})
		case "wait-lost":
			<-m.Done()
			out.Encode(reply{Event: "lost", Cause: context.Cause(m.Context()).Error()})
		case "unlock":
			r := reply{Event: "unlocked"}
			if err := m.Unlock(ctx); err != nil {
				r.Error = err.Error()
			}
			out.Encode(r)
		default:
			out.Encode(reply{Event: "error", Error: "unknown command " + strconv.Quote(cmd)})
		}
	}
	return in.Err()
}

// write sends value fenced by token and reports the answer.
func write(hc *http.Client, server, plugin, resource, holder string, token int64, value string) (reply, error) {
	var req *http.Request
	var err error
	if plugin != "" {
		req, err = http.NewRequest("PUT", plugin+"/kv/"+url.PathEscape(resource), strings.NewReader(value))
	} else {
		// The source names the writer in the server's rejection history.
		body, _ := json.Marshal(map[string]string{"source": "holder:" + holder})
		req, err = http.NewRequest("POST", server+"/v1/fence/"+url.PathEscape(resource), strings.NewReader(string(body)))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("X-Fencing-Token", strconv.FormatInt(token, 10))
	resp, err := hc.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	var b struct {
		Reason   string `json:"reason"`
		Required int64  `json:"required"`
	}
	if resp.StatusCode != http.StatusOK {
		json.NewDecoder(resp.Body).Decode(&b)
	}
	return reply{Token: token, Status: resp.StatusCode, Reason: b.Reason, Required: b.Required}, nil
}
