package operator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/operator"
	"github.com/rushgate/rushgate/internal/storetest"
	"github.com/rushgate/rushgate/internal/vault"
)

var ctx = context.Background()

func TestAddFindRemove(t *testing.T) {
	dir := t.TempDir()
	c := storetest.NewClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	here, there := operator.New(vault.Dir(dir), operator.Options{Clock: c.Now}), operator.New(vault.Dir(dir), operator.Options{Clock: c.Now}) // two instances
	if list, err := here.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("a new roster: %v, %v", list, err)
	}
	mina, key, err := here.Add(ctx, "mina", operator.Editor, 0)
	if err != nil || mina.Name != "mina" || mina.Role != operator.Editor || !mina.Created.Equal(c.Now()) || mina.ID == "" {
		t.Fatalf("add: %+v, %v", mina, err)
	}
	if !strings.HasPrefix(key, operator.KeyPrefix) || len(key) < 40 {
		t.Fatalf("key %q", key)
	}
	if _, _, err := here.Add(ctx, "jun", operator.Viewer, 0); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, operator.File))
	if err != nil || strings.Contains(string(raw), key) || !strings.Contains(string(raw), operator.Sum(key)) {
		t.Fatalf("the vault keeps the key itself, or not its sum: %s, %v", raw, err)
	}
	got, ok, err := there.ByKey(ctx, key)
	if err != nil || !ok || got != mina {
		t.Fatalf("the other instance finds %+v, %v, %v; want %+v", got, ok, err, mina)
	}
	if got, ok, _ := there.ByID(ctx, mina.ID); !ok || got.Name != "mina" {
		t.Fatalf("by id: %+v, %v", got, ok)
	}
	for _, wrong := range []string{"", key + "x", operator.KeyPrefix, strings.TrimPrefix(key, operator.KeyPrefix)} {
		if _, ok, _ := there.ByKey(ctx, wrong); ok {
			t.Fatalf("key %q opens", wrong)
		}
	}
	list, _ := there.List(ctx)
	if len(list) != 2 || list[0].Name != "jun" || list[1].Name != "mina" {
		t.Fatalf("list by name: %+v", list)
	}

	if _, _, err := there.Add(ctx, "mina", operator.Viewer, 0); !errors.Is(err, operator.ErrExists) {
		t.Fatalf("a second mina: %v", err)
	}
	gone, err := here.Remove(ctx, "mina")
	if err != nil || gone.ID != mina.ID {
		t.Fatalf("remove: %+v, %v", gone, err)
	}
	if _, ok, _ := here.ByKey(ctx, key); ok {
		t.Fatal("the instance that took the key back still takes it")
	}
	// The other instance trusts its copy for Fresh, no longer.
	c.Advance(operator.Fresh)
	if _, ok, _ := there.ByKey(ctx, key); ok {
		t.Fatalf("a key taken back still opens on another instance after %v", operator.Fresh)
	}
	if _, ok, _ := there.ByID(ctx, mina.ID); ok {
		t.Fatal("a session of a key taken back still opens")
	}
	if _, err := there.Remove(ctx, "mina"); !errors.Is(err, operator.ErrNotFound) {
		t.Fatalf("remove again: %v", err)
	}
	// A new key under the old name is a new operator: the old sessions stay ended.
	again, key2, err := there.Add(ctx, "mina", operator.Editor, 0)
	if err != nil || again.ID == mina.ID || key2 == key {
		t.Fatalf("mina again: %+v, %v", again, err)
	}
	if _, ok, _ := there.ByID(ctx, mina.ID); ok {
		t.Fatal("the old session opens for the new mina")
	}
}

func TestAddRefuses(t *testing.T) {
	r := operator.New(vault.Dir(t.TempDir()), operator.Options{})
	for _, c := range []struct {
		name string
		role operator.Role
	}{
		{"", operator.Editor}, {rushgate.Owner, operator.Editor}, {"a b", operator.Editor},
		{strings.Repeat("x", rushgate.MaxIDLen+1), operator.Viewer}, {"mina", operator.Owner}, {"mina", ""}, {"mina", "admin"},
	} {
		if _, _, err := r.Add(ctx, c.name, c.role, 0); !errors.Is(err, operator.ErrInvalid) {
			t.Fatalf("Add(%q, %q) = %v", c.name, c.role, err)
		}
	}
	for i := range operator.MaxOperators {
		if _, _, err := r.Add(ctx, fmt.Sprint("op", i), operator.Viewer, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.Add(ctx, "onemore", operator.Viewer, 0); !errors.Is(err, operator.ErrFull) {
		t.Fatalf("past the bound: %v", err)
	}
}

// TestConcurrentAdds: instances adding at once over one vault lose nobody, and each key opens as its
// own operator.
func TestConcurrentAdds(t *testing.T) {
	dir := t.TempDir()
	const instances, each = 4, 10
	keys := make([][]string, instances)
	var wg sync.WaitGroup
	for i := range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := operator.New(vault.Dir(dir), operator.Options{})
			for j := range each {
				_, key, err := r.Add(ctx, fmt.Sprintf("i%d-%d", i, j), operator.Editor, 0)
				if err != nil {
					t.Error(err)
					return
				}
				keys[i] = append(keys[i], key)
			}
		}()
	}
	wg.Wait()
	r := operator.New(vault.Dir(dir), operator.Options{})
	list, err := r.List(ctx)
	if err != nil || len(list) != instances*each {
		t.Fatalf("%d operators, %v; want %d", len(list), err, instances*each)
	}
	for i, ks := range keys {
		for j, k := range ks {
			if op, ok, _ := r.ByKey(ctx, k); !ok || op.Name != fmt.Sprintf("i%d-%d", i, j) {
				t.Fatalf("key of i%d-%d opens %+v, %v", i, j, op, ok)
			}
		}
	}
}

func TestUnreadableRoster(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, operator.File), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := operator.New(vault.Dir(dir), operator.Options{})
	if _, _, err := r.ByKey(ctx, "rgop_x"); err == nil {
		t.Fatal("an unreadable roster read as empty")
	}
	if _, _, err := r.Add(ctx, "mina", operator.Editor, 0); err == nil {
		t.Fatal("an unreadable roster replaced")
	}
}

func TestRoles(t *testing.T) {
	for _, c := range []struct {
		role   operator.Role
		method string
		want   bool
	}{
		{operator.Owner, "DELETE", true}, {operator.Editor, "POST", true}, {operator.Editor, "GET", true},
		{operator.Viewer, "GET", true}, {operator.Viewer, "HEAD", true}, {operator.Viewer, "POST", false},
		{operator.Viewer, "PUT", false}, {operator.Viewer, "DELETE", false}, {"", "POST", false},
	} {
		if got := c.role.Can(c.method); got != c.want {
			t.Fatalf("%q may %s: %v", c.role, c.method, got)
		}
	}
}

// TestLostRosterComesBack: a vault that loses the roster gets it back from an instance that held it.
func TestLostRosterComesBack(t *testing.T) {
	dir := t.TempDir()
	c := storetest.NewClock(time.Now())
	r := operator.New(vault.Dir(dir), operator.Options{Clock: c.Now})
	_, key, err := r.Add(ctx, "mina", operator.Editor, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, operator.File)); err != nil {
		t.Fatal(err)
	}
	c.Advance(operator.Fresh)
	if op, ok, err := r.ByKey(ctx, key); err != nil || !ok || op.Name != "mina" {
		t.Fatalf("after the loss: %+v, %v, %v", op, ok, err)
	}
	other := operator.New(vault.Dir(dir), operator.Options{})
	if op, ok, err := other.ByKey(ctx, key); err != nil || !ok || op.Name != "mina" {
		t.Fatalf("another instance after the put back: %+v, %v, %v", op, ok, err)
	}
}

// entries is an audit log in memory.
type entries struct {
	mu   sync.Mutex
	list []rushgate.Entry
}

func (e *entries) Append(_ context.Context, en rushgate.Entry) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, en)
	return nil
}

func (e *entries) Entries(context.Context, rushgate.AuditFilter, int) ([]rushgate.Entry, error) {
	return nil, nil
}

// TestAudited: making and taking back an operator are entries of the audit log, by who did it, and
// never carry the key.
func TestAudited(t *testing.T) {
	log := &entries{}
	r := operator.New(vault.Dir(t.TempDir()), operator.Options{Audit: log})
	as := rushgate.WithActor(ctx, rushgate.Owner)
	_, key, err := r.Add(as, "mina", operator.Viewer, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Remove(as, "mina"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Remove(as, "mina"); err == nil {
		t.Fatal("removed twice")
	}
	if len(log.list) != 2 {
		t.Fatalf("%d entries", len(log.list))
	}
	for i, action := range []string{rushgate.ActionCreate, rushgate.ActionDelete} {
		e := log.list[i]
		if e.Kind != "operator" || e.ID != "mina" || e.Action != action || e.By != rushgate.Owner || len(e.Changes) < 2 {
			t.Fatalf("entry %d: %+v", i, e)
		}
		for _, c := range e.Changes {
			if strings.Contains(string(c.Old)+string(c.New), key) || c.Field == "sum" || c.Field == "id" {
				t.Fatalf("entry %d shows %s", i, c.Field)
			}
		}
	}
}

// TestKeysThatExpire: a key made with a life works until it has lasted it, on every instance, with its
// console sessions; the roster still lists it, saying when it ended; lives out of bounds are refused.
func TestKeysThatExpire(t *testing.T) {
	dir := t.TempDir()
	c := storetest.NewClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	r := operator.New(vault.Dir(dir), operator.Options{Clock: c.Now})
	temp, key, err := r.Add(ctx, "temp", operator.Editor, 24*time.Hour)
	if err != nil || temp.Expires == nil || !temp.Expires.Equal(c.Now().Add(24*time.Hour)) {
		t.Fatalf("a key for a day: %+v, %v", temp, err)
	}
	other := operator.New(vault.Dir(dir), operator.Options{Clock: c.Now})
	c.Advance(24*time.Hour - time.Second)
	if _, ok, _ := other.ByKey(ctx, key); !ok {
		t.Fatal("a key refused before its end")
	}
	c.Advance(time.Second)
	if _, ok, _ := other.ByKey(ctx, key); ok {
		t.Fatal("a key taken after its end")
	}
	if _, ok, _ := r.ByID(ctx, temp.ID); ok {
		t.Fatal("a session of an expired key opens")
	}
	list, _ := r.List(ctx)
	if len(list) != 1 || !list[0].Expired(c.Now()) {
		t.Fatalf("the list: %+v", list)
	}
	for _, life := range []time.Duration{-time.Hour, time.Second, operator.MaxLife + time.Hour} {
		if _, _, err := r.Add(ctx, "x", operator.Viewer, life); !errors.Is(err, operator.ErrLife) {
			t.Fatalf("a life of %v: %v", life, err)
		}
	}
}

// TestSetRole: an operator's role changes with its key kept, on every instance within Fresh, and the
// change is an audit entry by whoever made it; a role not an operator's, or a name of none, is refused.
func TestSetRole(t *testing.T) {
	dir := t.TempDir()
	c := storetest.NewClock(time.Now())
	log := &entries{}
	here := operator.New(vault.Dir(dir), operator.Options{Clock: c.Now, Audit: log})
	there := operator.New(vault.Dir(dir), operator.Options{Clock: c.Now})
	_, key, err := here.Add(ctx, "mina", operator.Viewer, 0)
	if err != nil {
		t.Fatal(err)
	}
	if op, _, _ := there.ByKey(ctx, key); op.Role != operator.Viewer {
		t.Fatalf("before: %+v", op)
	}
	op, err := here.SetRole(rushgate.WithActor(ctx, rushgate.Owner), "mina", operator.Editor)
	if err != nil || op.Role != operator.Editor {
		t.Fatalf("SetRole: %+v, %v", op, err)
	}
	c.Advance(operator.Fresh)
	if op, ok, _ := there.ByKey(ctx, key); !ok || op.Role != operator.Editor {
		t.Fatalf("the other instance, after: %+v, %v", op, ok)
	}
	if n := len(log.list); n != 2 || log.list[1].Action != rushgate.ActionUpdate || log.list[1].By != rushgate.Owner ||
		len(log.list[1].Changes) != 1 || log.list[1].Changes[0].Field != "role" {
		t.Fatalf("the audit log: %+v", log.list)
	}
	if _, err := here.SetRole(ctx, "mina", operator.Editor); err != nil || len(log.list) != 2 {
		t.Fatalf("the same role again: %v, %d entries", err, len(log.list))
	}
	if _, err := here.SetRole(ctx, "mina", operator.Owner); !errors.Is(err, operator.ErrInvalid) {
		t.Fatalf("owner: %v", err)
	}
	if _, err := here.SetRole(ctx, "nobody", operator.Viewer); !errors.Is(err, operator.ErrNotFound) {
		t.Fatalf("nobody: %v", err)
	}
}

// slowVault holds its next read, as read, until told: a read that started before a write and ends
// after it.
type slowVault struct {
	vault.Dir
	hold    atomic.Bool
	read    chan struct{}
	release chan struct{}
}

func (v *slowVault) LoadOrCreate(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, bool, error) {
	b, created, err := v.Dir.LoadOrCreate(ctx, name, create)
	if v.hold.CompareAndSwap(true, false) {
		close(v.read)
		<-v.release
	}
	return b, created, err
}

// TestAReadOlderThanAWrite: a read of the roster that began before this instance changed it, and ends
// after, does not put the old roster back in its place: the change holds.
func TestAReadOlderThanAWrite(t *testing.T) {
	c := storetest.NewClock(time.Now())
	v := &slowVault{Dir: vault.Dir(t.TempDir()), read: make(chan struct{}), release: make(chan struct{})}
	r := operator.New(v, operator.Options{Clock: c.Now})
	_, key, err := r.Add(ctx, "mina", operator.Viewer, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(operator.Fresh) // the next lookup reads the vault
	v.hold.Store(true)
	old := make(chan operator.Role)
	go func() {
		op, _, _ := r.ByKey(ctx, key)
		old <- op.Role
	}()
	<-v.read
	if _, err := r.SetRole(ctx, "mina", operator.Editor); err != nil {
		t.Fatal(err)
	}
	close(v.release)
	<-old
	if op, _, _ := r.ByKey(ctx, key); op.Role != operator.Editor {
		t.Fatalf("after the old read ended, mina is %q", op.Role)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestKeysWho: the admin key is the owner's, an operator's key its operator's; without a roster an
// operator's key, like any other, is nobody's.
func TestKeysWho(t *testing.T) {
	r := operator.New(vault.Dir(t.TempDir()), operator.Options{})
	mina, key, err := r.Add(ctx, "mina", operator.Editor, 0)
	if err != nil {
		t.Fatal(err)
	}
	k := operator.NewKeys("the-admin-key-0123", r)
	for _, c := range []struct {
		key  string
		want operator.Operator
		ok   bool
	}{{"the-admin-key-0123", operator.Admin, true}, {key, mina, true}, {"the-admin-key-012", operator.Operator{}, false},
		{operator.KeyPrefix + "x", operator.Operator{}, false}, {"", operator.Operator{}, false}} {
		if got, ok, err := k.Who(ctx, c.key); err != nil || ok != c.ok || got != c.want {
			t.Fatalf("Who(%q) = %+v, %v, %v", c.key, got, ok, err)
		}
	}
	if _, ok, _ := operator.NewKeys("the-admin-key-0123", nil).Who(ctx, key); ok {
		t.Fatal("an operator's key opens without a roster")
	}
}
