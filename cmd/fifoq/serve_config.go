package main

import (
	"flag"
	"os"

	"github.com/fifoq/fifoq/internal/config"
)

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
