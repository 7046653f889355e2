// Package logging gives both binaries the same logging flags through k8s.io/component-base/logs:
// -v, -vmodule, --logging-format=text|json and --log-flush-frequency, applied with
// logsapi.ValidateAndApply so that klog, contextual loggers and log/slog all write in the chosen
// format. The text format (the default) is klog's usual text on stderr; json is one JSON object
// a line on stderr, as Kubernetes components write it.
package logging

import (
	"flag"
	"fmt"
	"strings"

	logsapi "k8s.io/component-base/logs/api/v1"
	// Registers the json format; without it --logging-format only accepts text.
	_ "k8s.io/component-base/logs/json/register"
)

// Formats are the values --logging-format accepts.
var Formats = []string{logsapi.DefaultLogFormat, logsapi.JSONLogFormat}

// AddFlags registers the logging flags on fs and returns the configuration they fill in; pass it
// to Apply once the flags are parsed. It replaces klog.InitFlags: the klog flags it leaves out
// (log_dir, logtostderr and the like) are deprecated for Kubernetes components and are not
// supported by the json format.
func AddFlags(fs *flag.FlagSet) *logsapi.LoggingConfiguration {
	c := logsapi.NewLoggingConfiguration()
	logsapi.AddGoFlags(c, fs)
	return c
}

// Apply validates the configuration and makes it the process's logging: call it right after
// flag parsing, before any goroutine logs. An unknown format is an error naming the permitted
// ones.
func Apply(c *logsapi.LoggingConfiguration) error {
	// A nil feature gate means the defaults: json is a beta format, on by default, and contextual
	// logging is on.
	if err := logsapi.ValidateAndApply(c, nil); err != nil {
		return fmt.Errorf("%w (--logging-format permits %s)", err, strings.Join(Formats, ", "))
	}
	return nil
}
