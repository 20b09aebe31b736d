package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"filippo.io/age"

	"github.com/rushgate/rushgate/internal/backup"
)

// restore unpacks a backup (GET /v1/backup) into a missing or empty data directory, checked before
// anything is put in place, or with --check only checks it.
func restore(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("restore", flag.ContinueOnError)
	fset.SetOutput(stderr)
	data := fset.String("data", "./rushgate-data", "the data directory to restore into: missing or empty")
	only := fset.Bool("check", false, "check the archive as a restore would, and restore nothing")
	identity := fset.String("identity", "", "an age identity file that opens a sealed backup (--backup-recipient), as rushgate backup-key writes it")
	fset.Usage = func() {
		fmt.Fprint(stderr, "Usage: rushgate restore [--data DIR | --check] [--identity FILE] ARCHIVE\n\n"+
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
	var ids []age.Identity
	if *identity != "" {
		f, err := os.Open(*identity)
		if err != nil {
			return fmt.Errorf("restore: --identity: %w", err)
		}
		ids, err = backup.ParseIdentities(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("restore: --identity %s: %w", *identity, err)
		}
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
		got, err = backup.Check(ctx, in, ids...)
	} else {
		got, err = backup.Restore(ctx, in, *data, ids...)
	}
	if errors.Is(err, backup.ErrEncrypted) && *identity == "" {
		return fmt.Errorf("%w (--identity FILE)", err)
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

// backupKey makes a key to seal backups with: the identity file that opens them, written where --out
// says and readable by its owner alone, and the public key for --backup-recipient, printed.
func backupKey(args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("backup-key", flag.ContinueOnError)
	fset.SetOutput(stderr)
	out := fset.String("out", "", "the identity file to write (it must not exist): keep it off the machine that takes the backups")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if *out == "" || fset.NArg() > 0 {
		return errors.New("backup-key: give --out FILE, where the identity goes")
	}
	id, recipient, err := backup.NewKey()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("backup-key: %w", err)
	}
	_, err = fmt.Fprintf(f, "# created: %s\n# public key: %s\n%s\n", time.Now().UTC().Format(time.RFC3339), recipient, id)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		os.Remove(*out)
		return fmt.Errorf("backup-key: %w", err)
	}
	fmt.Fprintf(stdout, "wrote the identity to %s: it restores the backups sealed to\n%s\nstart rushgate with --backup-recipient %s\n", *out, recipient, recipient)
	return nil
}
