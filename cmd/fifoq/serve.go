package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fifoq/fifoq/internal/server"
)

// serveOptions are the flags of "fifoq serve".
type serveOptions struct {
	listen   string
	inMemory bool
	account  string
	region   string
	logJSON  bool
}

func serve(args []string, stdout, stderr io.Writer) int {
	var opts serveOptions
	fs := flag.NewFlagSet("fifoq serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.listen, "listen", "127.0.0.1:9324", "address to listen on (host:port)")
	fs.BoolVar(&opts.inMemory, "in-memory", false, "keep all state in memory; it is lost when the server stops")
	fs.StringVar(&opts.account, "account", server.DefaultAccount, "account id of callers and of the queues they create")
	fs.StringVar(&opts.region, "region", server.DefaultRegion, "region written into queue ARNs")
	fs.BoolVar(&opts.logJSON, "log-json", false, "write log lines as JSON instead of text")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: fifoq serve [flags]\n\nRuns the SQS-compatible server.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fifoq serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if !validAccount(opts.account) {
		fmt.Fprintf(stderr, "fifoq serve: --account must be 12 digits, got %q\n", opts.account)
		return 2
	}

	var handler slog.Handler = slog.NewTextHandler(stderr, nil)
	if opts.logJSON {
		handler = slog.NewJSONHandler(stderr, nil)
	}
	logger := slog.New(handler)

	srv, err := server.New(server.Config{Account: opts.account, Region: opts.region, Logger: logger})
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	ln, err := net.Listen("tcp", opts.listen)
	if err != nil {
		logger.Error("cannot listen", "addr", opts.listen, "err", err)
		return 1
	}
	// Durable storage is not built yet: say plainly that state is memory only,
	// whether or not --in-memory was given, so nobody trusts it with data.
	logger.Info("fifoq started", "version", version, "listen", ln.Addr().String(),
		"account", opts.account, "region", opts.region,
		"storage", "memory only: all queues and messages are lost when the server stops")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if err != nil {
			logger.Error("server failed", "err", err)
			return 1
		}
		return 0
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Error("shutdown", "err", err)
		return 1
	}
	<-errc
	logger.Info("stopped")
	return 0
}

func validAccount(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
