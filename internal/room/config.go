package room

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/rushgate/rushgate"
)

// Defaults applied by [DecodeConfig] to fields a room's config leaves out.
const (
	DefaultSessionTTL  = 10 * time.Minute
	DefaultGrace       = 60 * time.Second
	DefaultIdleTimeout = 2 * time.Minute
)

// MaxCapacity bounds a room's capacity and rate, so that a typo cannot create a room that overflows a
// counter.
const MaxCapacity = 1_000_000_000

// Rate limits how many visitors a room admits in any window of length Per. It is enforced as a sliding
// window, so no interval of that length ever sees more than Admits admissions, wherever it starts.
type Rate struct {
	Admits int               `json:"admits"`
	Per    rushgate.Duration `json:"per"`
}

// Config is the operator's description of a room. Capacity and Rate may be combined; at least one of
// them must limit admission, or the room would be a queue that lets everybody straight through.
type Config struct {
	// Capacity is the most visitors admitted at once; 0 means no limit.
	Capacity int `json:"capacity"`
	// Rate, when set, caps new admissions per interval.
	Rate *Rate `json:"rate,omitempty"`
	// SessionTTL is how long an admission lasts once collected.
	SessionTTL rushgate.Duration `json:"session_ttl"`
	// Grace is how long an admitted visitor has to collect the admission before the slot goes to the
	// next in line.
	Grace rushgate.Duration `json:"grace"`
	// IdleTimeout is how long a waiting visitor may go without polling or streaming before leaving the line.
	IdleTimeout rushgate.Duration `json:"idle_timeout"`
	// OpensAt, when set, holds admission until then; everyone who arrived before it is put in a random
	// order, so that arriving early by a millisecond gives no advantage.
	OpensAt *time.Time `json:"opens_at,omitempty"`
	// Paused rooms keep their line but admit nobody.
	Paused bool `json:"paused"`
	// Page brands the room's waiting page; nil shows rushgate's own.
	Page *Page `json:"page,omitempty"`
	// Drop, when set, is the drop whose stock the room follows: it never holds more admissions than the
	// drop has units left, and once the drop is sold out it admits nobody and tells its line so. The
	// drop must sit behind the room.
	Drop string `json:"drop,omitempty"`
	// Challenge, when its difficulty is above 0, asks every new visitor for a proof of work before it
	// takes a place (see internal/challenge).
	Challenge *Challenge `json:"challenge,omitempty"`
	// Captcha asks every new visitor for a CAPTCHA answer (Rushgate-Captcha) that the server checks
	// with its --captcha-verify-url.
	Captcha bool `json:"captcha,omitempty"`
	// Entry is who may take a place: "open" (anyone, the default) or "invite" (a visitor with an
	// invite code the admin uploaded, or an enqueue token the site signed for a subject).
	Entry string `json:"entry,omitempty"`
	// Mode says how the room treats a crowd (see [Mode]); "" is ModeFIFO. Changing it keeps the line.
	Mode Mode `json:"mode,omitempty"`
	// SiteURL is the protected site. The waiting-room page sends admitted visitors there, or to a
	// return_to URL on the same origin, never elsewhere, so that a crafted link cannot carry an
	// admission token off to another site.
	SiteURL string `json:"site_url,omitempty"`
}

// Page is how a room's waiting page looks: what a site puts in front of its crowd as its own.
type Page struct {
	// Title names the event or the site, shown above the place and as the page's title.
	Title string `json:"title,omitempty"`
	// Message is shown to everyone in line (and to those a closed room turns away).
	Message string `json:"message,omitempty"`
	// LogoURL is an absolute http(s) URL of the logo; the page's Content-Security-Policy allows images
	// from its origin.
	LogoURL string `json:"logo_url,omitempty"`
	// BrandColor is the page's accent, "#rrggbb".
	BrandColor string `json:"brand_color,omitempty"`
	// Language is the page's language when neither ?lang= nor the browser names one it has ("en", "ko").
	Language string `json:"language,omitempty"`
}

// message is the page's message, "" without a page.
func (c Config) message() string {
	if c.Page == nil {
		return ""
	}
	return c.Page.Message
}

func (p *Page) validate() error {
	if p == nil {
		return nil
	}
	switch {
	case len(p.Title) > 200:
		return &ConfigError{"page.title", "at most 200 bytes"}
	case len(p.Message) > 2000:
		return &ConfigError{"page.message", "at most 2000 bytes"}
	case len(p.Language) > 16:
		return &ConfigError{"page.language", "a language code such as \"en\" or \"ko\""}
	}
	if p.LogoURL != "" {
		u, err := url.Parse(p.LogoURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(p.LogoURL) > 2048 ||
			strings.ContainsAny(u.Host, " ;,'\"") {
			return &ConfigError{"page.logo_url", "must be an absolute http or https URL"}
		}
	}
	if c := p.BrandColor; c != "" {
		ok := len(c) == 7 && c[0] == '#'
		for i := 1; ok && i < len(c); i++ {
			ok = strings.ContainsRune("0123456789abcdefABCDEF", rune(c[i]))
		}
		if !ok {
			return &ConfigError{"page.brand_color", `must be "#rrggbb"`}
		}
	}
	return nil
}

// The entries of a room.
const (
	EntryOpen   = "open"
	EntryInvite = "invite"
)

// MaxInviteLen bounds an invite code.
const MaxInviteLen = 128

// Challenge is a room's proof of work on join.
type Challenge struct {
	// Difficulty is the leading zero bits a solution's hash needs; 0 asks none.
	Difficulty int `json:"difficulty"`
	// Max, when above Difficulty, lets the difficulty climb one bit for each doubling of the room's
	// joins per second past PressureFrom, up to Max, and fall back as they slow.
	Max int `json:"max,omitempty"`
}

// PressureFrom is the joins per second of a room at which a challenge's difficulty starts to climb.
const PressureFrom = 64

// MaxDifficulty bounds a challenge's difficulty: 2^30 hashes take a phone minutes.
const MaxDifficulty = 30

// Mode is how a room treats its crowd.
type Mode string

// The modes of a room.
const (
	// ModeFIFO admits from the front of the line within capacity and rate: the waiting room.
	ModeFIFO Mode = "fifo"
	// ModePassthrough admits everyone at once, whatever the capacity and rate: the rush is over, and
	// whoever still waits goes straight in.
	ModePassthrough Mode = "passthrough"
	// ModeReject takes no new joins (ErrClosed); those already in line keep their places and are
	// admitted as in fifo.
	ModeReject Mode = "reject"
	// ModeQueueAll lets nobody in, even while slots are free, until opens_at passes or an operator
	// changes the mode: everyone queues first.
	ModeQueueAll Mode = "queue_all"
)

// Valid reports whether m is a mode ("" counts as fifo).
func (m Mode) Valid() bool {
	switch m {
	case "", ModeFIFO, ModePassthrough, ModeReject, ModeQueueAll:
		return true
	}
	return false
}

// Stopped reports whether the room admits nobody until its operator changes the config: paused, or
// queueing all with no opening set. Its line cannot be told a wait, only that it waits for that.
func (c Config) Stopped() bool { return c.Paused || (c.Mode == ModeQueueAll && c.OpensAt == nil) }

// Holds reports whether the room admits nobody at now: paused, before its opening, or queueing all
// until an opening that has not come (or that it has none of).
func (c Config) Holds(now time.Time) bool {
	before := c.OpensAt != nil && now.Before(*c.OpensAt)
	return c.Stopped() || before
}

// ConfigError explains why a config was refused, naming the field so a client can point at it.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return "room config: " + e.Reason
	}
	return "room config: " + e.Field + ": " + e.Reason
}

// DecodeConfig reads a config from JSON, refusing unknown fields and trailing data, fills in defaults and
// validates the result. Every refusal is a *ConfigError.
func DecodeConfig(b []byte) (Config, error) {
	var c Config
	if err := rushgate.DecodeObject(b, &c); err != nil {
		de, _ := errors.AsType[*rushgate.DecodeError](err)
		return Config{}, &ConfigError{Field: de.Field, Reason: de.Reason}
	}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func (c *Config) applyDefaults() {
	if c.SessionTTL == 0 {
		c.SessionTTL = rushgate.Duration(DefaultSessionTTL)
	}
	if c.Grace == 0 {
		c.Grace = rushgate.Duration(DefaultGrace)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = rushgate.Duration(DefaultIdleTimeout)
	}
	if c.OpensAt != nil {
		t := c.OpensAt.UTC().Truncate(time.Millisecond)
		c.OpensAt = &t
	}
}

// Validate reports the first problem with c, as a *ConfigError.
func (c Config) Validate() error {
	switch {
	case c.Capacity < 0 || c.Capacity > MaxCapacity:
		return &ConfigError{"capacity", fmt.Sprintf("must be between 0 and %d", MaxCapacity)}
	case c.Capacity == 0 && c.Rate == nil:
		return &ConfigError{"", "set capacity, rate or both: a room with neither admits everybody at once"}
	}
	if c.Rate != nil {
		if c.Rate.Admits < 1 || c.Rate.Admits > MaxCapacity {
			return &ConfigError{"rate.admits", fmt.Sprintf("must be between 1 and %d", MaxCapacity)}
		}
		if err := checkDuration("rate.per", c.Rate.Per); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		d    rushgate.Duration
	}{{"session_ttl", c.SessionTTL}, {"grace", c.Grace}, {"idle_timeout", c.IdleTimeout}} {
		if err := checkDuration(f.name, f.d); err != nil {
			return err
		}
	}
	if ch := c.Challenge; ch != nil {
		if ch.Difficulty < 0 || ch.Difficulty > MaxDifficulty {
			return &ConfigError{"challenge.difficulty", fmt.Sprintf("must be between 0 and %d leading zero bits", MaxDifficulty)}
		}
		if ch.Max != 0 && (ch.Max < ch.Difficulty || ch.Max > MaxDifficulty) {
			return &ConfigError{"challenge.max", fmt.Sprintf("must be between difficulty and %d", MaxDifficulty)}
		}
	}
	if c.Entry != "" && c.Entry != EntryOpen && c.Entry != EntryInvite {
		return &ConfigError{"entry", `must be "open" or "invite"`}
	}
	if c.Drop != "" && !rushgate.ValidID(c.Drop) {
		return &ConfigError{"drop", "not a valid drop id"}
	}
	if err := c.Page.validate(); err != nil {
		return err
	}
	if !c.Mode.Valid() {
		return &ConfigError{"mode", `must be "fifo", "passthrough", "reject" or "queue_all"`}
	}
	if c.OpensAt != nil && !rushgate.TimeInRange(*c.OpensAt) {
		return &ConfigError{"opens_at", rushgate.TimeRangeReason}
	}
	if c.SiteURL != "" {
		u, err := url.Parse(c.SiteURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(c.SiteURL) > 2048 {
			return &ConfigError{"site_url", "must be an absolute http or https URL"}
		}
	}
	return nil
}

// Target returns where the waiting-room page sends an admitted visitor: returnTo when it is on the
// site's origin, else the site itself; "" when the room names no site.
//
// A returnTo path to a drop's or an auction's page of rushgate itself ("/d/ID", "/a/ID") is kept as a
// path, cleaned so that it stays on this site ("//evil.example" becomes "/evil.example"): the way back
// from the line to the page that sent the visitor there.
func (c Config) Target(returnTo string) string {
	if strings.HasPrefix(returnTo, "/") || strings.HasPrefix(returnTo, `\`) {
		p := "/" + strings.TrimLeft(returnTo, `/\`)
		if (strings.HasPrefix(p, "/d/") || strings.HasPrefix(p, "/a/")) && !strings.ContainsAny(p, "\\\x00") && len(p) < 512 {
			return p
		}
	}
	site, err := url.Parse(c.SiteURL)
	if c.SiteURL == "" || err != nil {
		return ""
	}
	if r, err := url.Parse(returnTo); err == nil && returnTo != "" && r.Scheme == site.Scheme && r.Host == site.Host && r.User == nil {
		return r.String()
	}
	return site.String()
}

func checkDuration(name string, d rushgate.Duration) error {
	if time.Duration(d) < time.Millisecond || time.Duration(d) > rushgate.MaxDuration {
		return &ConfigError{name, "must be between 1ms and " + rushgate.MaxDuration.String()}
	}
	return nil
}
