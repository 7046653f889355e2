// Command fakeserver is the container the kubelet runner's tests run: an HTTP server that
// reports its command line, environment and pid, reads files by their container path (after
// --remap-path), and is ready while a file says "yes".
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type remaps [][2]string

func (r *remaps) String() string { return fmt.Sprint(*r) }

func (r *remaps) Set(v string) error {
	from, to, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want FROM=TO, got %q", v)
	}
	*r = append(*r, [2]string{from, to})
	return nil
}

// apply maps a container path to a local one, first match wins (the runner sends the
// longest mount path first).
func (r remaps) apply(p string) string {
	for _, m := range r {
		if p == m[0] || strings.HasPrefix(p, m[0]+"/") {
			return m[1] + strings.TrimPrefix(p, m[0])
		}
	}
	return p
}

func main() {
	var rm remaps
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	config := flag.String("config", "", "a file read as given (the runner rewrites the path)")
	readyFile := flag.String("ready-file", "", "container path of a file that must say yes for /readyz; always ready when empty")
	flag.Var(&rm, "remap-path", "FROM=TO, repeatable")
	flag.String("greeting", "", "ignored; shows in /args")
	flag.Parse()

	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/pid", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, os.Getpid()) })
	mux.HandleFunc("/args", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, os.Args[1:]) })
	mux.HandleFunc("/env", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, os.Environ()) })
	mux.HandleFunc("/config", func(w http.ResponseWriter, _ *http.Request) {
		data, err := os.ReadFile(*config)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_, _ = w.Write(data)
	})
	mux.HandleFunc("/read", func(w http.ResponseWriter, r *http.Request) {
		data, err := os.ReadFile(rm.apply(r.URL.Query().Get("path")))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_, _ = w.Write(data)
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if *readyFile == "" {
			return
		}
		data, err := os.ReadFile(rm.apply(*readyFile))
		if err != nil || strings.TrimSpace(string(data)) != "yes" {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
	})
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Println("serving on", *listen)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
