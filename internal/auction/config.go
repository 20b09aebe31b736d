// Package auction is the live-auction domain: configs with increment tables, a reserve and buy-now,
// and the bidding rules of the big marketplaces (proxy bidding, earlier of two equal maximums wins, no
// bidding against oneself, soft close). Money is always integer minor units. The rules are written
// twice: in Go, as [State]'s methods, pure functions of the state and an instant that the embedded
// backend applies inside its critical section; and in Lua (internal/redisstore/lua/auction_lib.lua),
// which the Redis backend runs as one step inside Redis. The conformance suite (internal/storetest)
// holds the two to one behaviour. Who may bid is the [Service]'s, and so are live feeds: the feeds of
// one auction on one instance share one read of its events per change ([Service.Follow]), and a shared
// store's [Watcher] brings the changes other instances make.
package auction

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/visitor"
)

// MaxAmount bounds every amount, far below where int64 arithmetic on prices could overflow.
const MaxAmount = 1_000_000_000_000_000

var currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)

// Tier is one row of an increment table: from this price on, bids go up by Step.
type Tier struct {
	From int64 `json:"from"`
	Step int64 `json:"step"`
}

// Increment is either a fixed step or a table of tiers; it reads and writes itself as a number or as
// [{"from": amount, "step": amount}, ...].
type Increment struct {
	Tiers []Tier
}

// Fixed returns a constant increment.
func Fixed(step int64) Increment { return Increment{Tiers: []Tier{{From: 0, Step: step}}} }

// Step returns the increment that applies at price: the step of the last tier starting at or below it.
func (in Increment) Step(price int64) int64 {
	step := in.Tiers[0].Step
	for _, t := range in.Tiers {
		if t.From > price {
			break
		}
		step = t.Step
	}
	return step
}

// MarshalJSON writes a one-tier increment as a number and a table as a list.
func (in Increment) MarshalJSON() ([]byte, error) {
	if len(in.Tiers) == 1 && in.Tiers[0].From == 0 {
		return json.Marshal(in.Tiers[0].Step)
	}
	return json.Marshal(in.Tiers)
}

// UnmarshalJSON reads a number or a table of tiers.
func (in *Increment) UnmarshalJSON(b []byte) error {
	var step int64
	if err := json.Unmarshal(b, &step); err == nil {
		*in = Fixed(step)
		return nil
	}
	var tiers []Tier
	if err := json.Unmarshal(b, &tiers); err != nil {
		return errors.New(`must be an amount or a table [{"from": 0, "step": 100}, ...]`)
	}
	in.Tiers = tiers
	return nil
}

// SoftClose moves the end of an auction when a bid arrives close to it, so sniping at the last second
// only gives everybody else another chance.
type SoftClose struct {
	Window rushgate.Duration `json:"window"`
	Extend rushgate.Duration `json:"extend"`
}

// Config is an auction as the operator describes it.
type Config struct {
	Title string `json:"title"`
	// Message is the operator's word to the bidders on the auction's page ("shipping within Korea
	// only"), which, like the title, may change at any time, bids or not (see [Store.Amend]).
	Message    string    `json:"message,omitempty"`
	Currency   string    `json:"currency"`
	StartPrice int64     `json:"start_price"`
	Increment  Increment `json:"increment"`
	// ReservePrice is secret: the public view says only whether it is met.
	ReservePrice *int64 `json:"reserve_price,omitempty"`
	// BuyNowPrice is available until the first bid, or until the reserve is met when there is one.
	BuyNowPrice *int64     `json:"buy_now_price,omitempty"`
	StartsAt    time.Time  `json:"starts_at"`
	EndsAt      time.Time  `json:"ends_at"`
	SoftClose   *SoftClose `json:"soft_close,omitempty"`
	// Room, when set, admits only bidders holding a valid admission token for that waiting room.
	Room string `json:"room,omitempty"`
	// Identity is whose identity a bidder is: "any" (the default), "site" or "room" (see
	// visitor.Identity).
	Identity visitor.Identity `json:"identity,omitempty"`
}

// ConfigError explains why a config was refused, naming the field.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return "auction config: " + e.Reason
	}
	return "auction config: " + e.Field + ": " + e.Reason
}

// DecodeConfig reads and validates a config, refusing unknown fields and trailing data. Every refusal
// is a *ConfigError.
func DecodeConfig(b []byte) (Config, error) {
	var c Config
	if err := rushgate.DecodeObject(b, &c); err != nil {
		de, _ := errors.AsType[*rushgate.DecodeError](err)
		return Config{}, &ConfigError{Field: de.Field, Reason: de.Reason}
	}
	c.StartsAt, c.EndsAt = c.StartsAt.UTC().Truncate(time.Millisecond), c.EndsAt.UTC().Truncate(time.Millisecond)
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func amountOK(v int64) bool { return v >= 1 && v <= MaxAmount }

// Validate reports the first problem with c, as a *ConfigError.
func (c Config) Validate() error {
	switch {
	case c.Title == "" || len(c.Title) > 200:
		return &ConfigError{"title", "must be 1-200 bytes"}
	case len(c.Message) > 2000:
		return &ConfigError{"message", "at most 2000 bytes"}
	case !currencyPattern.MatchString(c.Currency):
		return &ConfigError{"currency", "must be an ISO 4217 code such as EUR"}
	case !amountOK(c.StartPrice):
		return &ConfigError{"start_price", fmt.Sprintf("must be between 1 and %d minor units", MaxAmount)}
	}
	if err := c.Increment.validate(); err != nil {
		return err
	}
	if r := c.ReservePrice; r != nil && (!amountOK(*r) || *r < c.StartPrice) {
		return &ConfigError{"reserve_price", fmt.Sprintf("must be at least the start price and at most %d", MaxAmount)}
	}
	if b := c.BuyNowPrice; b != nil {
		if !amountOK(*b) || *b <= c.StartPrice || (c.ReservePrice != nil && *b < *c.ReservePrice) {
			return &ConfigError{"buy_now_price", fmt.Sprintf("must be above the start price, at least the reserve and at most %d", MaxAmount)}
		}
	}
	switch {
	case c.StartsAt.IsZero() || c.EndsAt.IsZero():
		return &ConfigError{"ends_at", "starts_at and ends_at are required"}
	case !rushgate.TimeInRange(c.StartsAt):
		return &ConfigError{"starts_at", rushgate.TimeRangeReason}
	case !rushgate.TimeInRange(c.EndsAt):
		return &ConfigError{"ends_at", rushgate.TimeRangeReason}
	case !c.EndsAt.After(c.StartsAt):
		return &ConfigError{"ends_at", "must be after starts_at"}
	case c.EndsAt.Sub(c.StartsAt) > rushgate.MaxDuration:
		return &ConfigError{"ends_at", "an auction lasts at most a year"}
	}
	if sc := c.SoftClose; sc != nil && (time.Duration(sc.Window) <= 0 || time.Duration(sc.Extend) <= 0 ||
		time.Duration(sc.Window) > rushgate.MaxDuration || time.Duration(sc.Extend) > rushgate.MaxDuration) {
		return &ConfigError{"soft_close", "window and extend must be positive durations of at most " + rushgate.MaxDuration.String()}
	}
	if c.Room != "" && !rushgate.ValidID(c.Room) {
		return &ConfigError{"room", "not a valid room id"}
	}
	switch {
	case !c.Identity.Valid():
		return &ConfigError{"identity", `must be "any", "site" or "room"`}
	case c.Identity == visitor.IdentityRoom && c.Room == "":
		return &ConfigError{"identity", `"room" needs a room`}
	}
	return nil
}

func (in Increment) validate() error {
	if len(in.Tiers) == 0 || len(in.Tiers) > 100 {
		return &ConfigError{"increment", "needs 1-100 tiers"}
	}
	for i, t := range in.Tiers {
		switch {
		case !amountOK(t.Step):
			return &ConfigError{"increment", "every step must be at least 1"}
		case i == 0 && t.From != 0:
			return &ConfigError{"increment", "the first tier must start from 0"}
		case i > 0 && t.From <= in.Tiers[i-1].From:
			return &ConfigError{"increment", "tiers must be in increasing order of from"}
		case t.From < 0 || t.From > MaxAmount:
			return &ConfigError{"increment", "tier bounds must be amounts"}
		}
	}
	return nil
}
