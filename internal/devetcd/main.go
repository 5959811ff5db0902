// Command devetcd runs a one-member etcd in this process, for trying
// fenceview's cluster mode on one machine (task cluster) and for the
// cluster benchmark, where no etcd is installed. Production clusters run a
// real etcd cluster (three or five members).
//
//	go run ./internal/devetcd -dir /tmp/etcd -client 127.0.0.1:2379 -peer 127.0.0.1:2380
package main

import (
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dir := flag.String("dir", "devetcd.data", "data directory")
	client := flag.String("client", "127.0.0.1:2379", "client address")
	peer := flag.String("peer", "127.0.0.1:2380", "peer address")
	flag.Parse()

	cfg := embed.NewConfig()
	cfg.Name = "devetcd"
	cfg.Dir = *dir
	cfg.LogLevel = "error"
	c, p := url.URL{Scheme: "http", Host: *client}, url.URL{Scheme: "http", Host: *peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{c}, []url.URL{c}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{p}, []url.URL{p}
	cfg.InitialCluster = cfg.Name + "=" + p.String()
	// Keep MVCC history bounded, as an operator would.
	cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "periodic", "5m"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatal(err)
	}
	<-e.Server.ReadyNotify()
	fmt.Println("etcd ready on", c.String())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-e.Err():
		log.Print(err)
	}
	e.Close()
}
