// Command rushgate keeps a website standing when a crowd arrives at once: a virtual waiting room with
// signed admissions, in one binary that needs nothing else to run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/rushgate/rushgate/internal/loadtest"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

const usage = `rushgate: a waiting room in front of your site.

Usage:
  rushgate serve [flags]   run the server (rushgate serve -h lists the flags)
  rushgate loadtest --room R [flags]
                           rehearse an on-sale against a running rushgate (rushgate loadtest -h)
  rushgate loadtest auction|drop [flags]
                           rehearse an auction's bidding or a drop's opening, and read it back;
                           a rehearsal that finds problems exits with status 1
  rushgate restore [--data DIR | --check] [--identity FILE] ARCHIVE
                           restore a backup (GET /v1/backup) into a new data directory, or check it
  rushgate backup-key --out FILE
                           make a key to seal backups with (--backup-recipient) and open them (--identity)
  rushgate version         print the version
  rushgate help            print this help

Every flag can also be set as an environment variable: --admin-key is RUSHGATE_ADMIN_KEY.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rushgate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "loadtest":
		return loadtest.Run(ctx, args[1:], stdout)
	case "restore":
		return restore(ctx, args[1:], os.Stdin, stdout, stderr)
	case "backup-key":
		return backupKey(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "rushgate", buildVersion())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
