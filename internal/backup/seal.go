package backup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"filippo.io/age"
)

// A backup holds every secret of its instance, so one that leaves the machine is better sealed: with
// recipients, archives are age files (age-encryption.org/v1), which only the holder of one of their
// identities opens, with rushgate restore --identity or the age tool itself. Each is a public key, so
// the instance that writes backups cannot read them.

// ErrEncrypted says that an archive is sealed and no identity given opens it.
var ErrEncrypted = errors.New("backup: the archive is encrypted; give the identity (an age secret key) of one of its recipients")

// ageMagic begins every age file.
const ageMagic = "age-encryption.org/v1"

// ParseRecipients reads the recipients backups are sealed to: age public keys ("age1..."), separated
// by commas, spaces or lines.
func ParseRecipients(s string) ([]age.Recipient, error) {
	to, err := age.ParseRecipients(strings.NewReader(strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\n' || r == '\t'
	}), "\n")))
	if err != nil {
		return nil, fmt.Errorf("backup: recipients: %w", err)
	}
	// Some kinds of key may not be mixed in one file (post-quantum ones with others): found now
	// rather than at the first backup.
	if _, err := age.Encrypt(io.Discard, to...); err != nil {
		return nil, fmt.Errorf("backup: recipients: %w", err)
	}
	return to, nil
}

// ParseIdentities reads identities that open sealed archives, as age's identity files hold them.
func ParseIdentities(r io.Reader) ([]age.Identity, error) {
	ids, err := age.ParseIdentities(r)
	if err != nil {
		return nil, fmt.Errorf("backup: identities: %w", err)
	}
	return ids, nil
}

// NewKey returns a new identity to open sealed archives, as an identity file holds it, and its
// recipient, the public key to seal them to.
func NewKey() (identity, recipient string, err error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", "", fmt.Errorf("backup: %w", err)
	}
	return id.String(), id.Recipient().String(), nil
}

// sealed writes an age file of what is written to it into w. Its header goes out with the first byte
// of the archive, so that a backup that fails before that still writes nothing.
type sealed struct {
	w  io.Writer
	to []age.Recipient
	ew io.WriteCloser
}

func (s *sealed) Write(p []byte) (int, error) {
	if s.ew == nil {
		ew, err := age.Encrypt(s.w, s.to...)
		if err != nil {
			return 0, err
		}
		s.ew = ew
	}
	return s.ew.Write(p)
}

// Close writes the last of the age file.
func (s *sealed) Close() error {
	if s.ew == nil {
		return nil
	}
	return s.ew.Close()
}

// opened returns what r holds: opened with ids when it is an age file, as it is otherwise.
func opened(r io.Reader, ids []age.Identity) (io.Reader, error) {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(len(ageMagic)); string(head) != ageMagic {
		return br, nil
	}
	if len(ids) == 0 {
		return nil, ErrEncrypted
	}
	d, err := age.Decrypt(br, ids...)
	var none *age.NoIdentityMatchError
	switch {
	case errors.As(err, &none):
		return nil, fmt.Errorf("%w: none of the identities given is one of its recipients", ErrEncrypted)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrArchive, err)
	}
	return d, nil
}
