package gate

import (
	"fmt"
	"slices"
	"strings"
)

// Values of fail-on (the command line's --fail-on and the Action's input): which verdict
// fails the command, from the least strict.
const (
	FailOnNever        = "never"        // only a failure of the tool or the engine (error)
	FailOnFail         = "fail"         // fail, incomparable and a missing baseline not allowed
	FailOnInconclusive = "inconclusive" // the default: an undecided rule as well
	FailOnWarn         = "warn"         // warn as well
)

// FailOns are fail-on's values. DefaultFailOn is inconclusive: an undecided rule is not a
// pass, so a regression the job could not decide never lets the command succeed unless
// fail-on says so (docs/noise.md, "Inconclusive").
var (
	FailOns       = []string{FailOnFail, FailOnInconclusive, FailOnWarn, FailOnNever}
	DefaultFailOn = FailOnInconclusive
)

// CheckFailOn says what is wrong with a fail-on value; "" is the default.
func CheckFailOn(v string) error {
	if v == "" || slices.Contains(FailOns, v) {
		return nil
	}
	return fmt.Errorf("%q: want one of %s", v, strings.Join(FailOns, ", "))
}
