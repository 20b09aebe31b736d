package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rushgate/rushgate/internal/backup"
)

// restore unpacks a backup (GET /v1/backup) into a missing or empty data directory, checked before
// anything is put in place, or with --check only checks it.
func restore(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("restore", flag.ContinueOnError)
	fset.SetOutput(stderr)
	data := fset.String("data", "./rushgate-data", "the data directory to restore into: missing or empty")
	only := fset.Bool("check", false, "check the archive as a restore would, and restore nothing")
	fset.Usage = func() {
		fmt.Fprint(stderr, "Usage: rushgate restore [--data DIR | --check] ARCHIVE\n\n"+
			"Restores a backup taken with GET /v1/backup (ARCHIVE, or - for standard input) into DIR, which must be\n"+
			"missing or empty, then prints what it holds; rushgate serve --data DIR starts from it. With --check it\n"+
			"only reads the archive through, as a restore would, and prints what it holds.\n\n")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return err
	}
	if err := applyEnv(fset); err != nil {
		return err
	}
	if fset.NArg() != 1 {
		fset.Usage()
		return errors.New("restore: give the archive to restore (or - for standard input)")
	}
	name := fset.Arg(0)
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		defer f.Close()
		in = f
	}
	var got backup.Restored
	var err error
	if *only {
		got, err = backup.Check(ctx, in)
	} else {
		got, err = backup.Restore(ctx, in, *data)
	}
	if err != nil {
		return err
	}
	var size int64
	for _, f := range got.Files {
		size += f.Size
	}
	if *only {
		fmt.Fprintf(stdout, "checked %s: %d files, %d bytes\n", name, len(got.Files), size)
	} else {
		fmt.Fprintf(stdout, "restored %s into %s: %d files, %d bytes\n", name, *data, len(got.Files), size)
	}
	if r := got.Record; r != nil {
		fmt.Fprintf(stdout, "  the record %s: rooms %d, drops %d, claims %d, auctions %d, auction events %d\n",
			r.ID, r.Rooms, r.Drops, r.Claims, r.Auctions, r.Events)
	}
	if l := got.Lines; l != nil {
		fmt.Fprintf(stdout, "  the lines: rooms %d, visitors waiting %d, admitted %d\n", l.Rooms, l.Waiting, l.Admitted)
	}
	for _, f := range got.Files {
		fmt.Fprintf(stdout, "  %-20s %12d bytes\n", f.Name, f.Size)
	}
	if got.Lines == nil {
		fmt.Fprintln(stdout, "  no lines in it: it was taken on Redis, which keeps the lines and secrets, or with --postgres,\n"+
			"  which keeps the record: start from it with the same --redis or --postgres")
	}
	if !*only {
		fmt.Fprintf(stdout, "start from it: rushgate serve --data %s\n", *data)
	}
	return nil
}
