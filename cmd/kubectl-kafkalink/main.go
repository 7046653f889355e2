// Command kubectl-kafkalink is the kubectl plugin of kafkalink (kubectl kafkalink): status
// trees, diagnosis and client configuration. Everything but the wiring is in pkg/plugin.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/kafkalink/kafkalink/pkg/plugin"
)

func main() {
	cmd := plugin.NewCommand(os.Stdout, os.Stderr, isTerminal(os.Stdout))
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// isTerminal reports whether f is a character device (a terminal), where colour belongs.
func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
