package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"time"

	"github.com/fifoq/fifoq/internal/config"
	"github.com/fifoq/fifoq/internal/server"
)

// applyTimeout bounds declaring the config file's queues at start.
const applyTimeout = 2 * time.Minute

// loadConfig loads the config file that --config or FIFOQ_CONFIG names, if
// any, and gives every setting its value by precedence (flag, then FIFOQ_
// variable, then file, then default) by setting the flags of fs, so that
// the options bound to them hold the settings in effect. It returns nil
// when no config file is named.
func loadConfig(fs *flag.FlagSet) (*config.File, error) {
	var f *config.File
	if path := config.ConfigPath(fs, os.LookupEnv); path != "" {
		var err error
		if f, err = config.Load(path); err != nil {
			return nil, err
		}
	}
	if err := config.Resolve(fs, f, os.LookupEnv); err != nil {
		return nil, err
	}
	return f, nil
}

// applyConfig declares the config file's queues on srv, as the default
// account and in the region of opts, and logs one line that says which
// file was applied and what it did to its queues.
func applyConfig(srv *server.Server, f *config.File, opts serveOptions, logger *slog.Logger) error {
	return applyConfigTo(context.Background(), srv, f, opts, logger)
}

// applyConfigTo is applyConfig under ctx.
func applyConfigTo(ctx context.Context, srv *server.Server, f *config.File, opts serveOptions, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, applyTimeout)
	defer cancel()
	res, err := f.Apply(ctx, srv, opts.account, opts.region)
	if err != nil {
		return err
	}
	logger.Info("config file loaded", "file", f.Path,
		"queues_created", res.Count(config.Created), "queues_updated", res.Count(config.Updated),
		"queues_unchanged", res.Count(config.Unchanged),
		"created", res.Names(config.Created), "updated", res.Names(config.Updated))
	return nil
}
