package ghaction_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sethvargo/go-githubactions"
	"github.com/slogate/slogate/ghaction"
)

// The order `slogate ci` is expected to follow: inputs and context, the fork check before
// any workload runs, the files and the summary before any network call, then the comment,
// whose refusal on a fork is a warning.
func Example() {
	a := githubactions.New(githubactions.WithGetenv(os.Getenv), githubactions.WithWriter(os.Stdout))
	in, err := ghaction.ReadInputs(a)
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // exit 2
		return
	}
	gh, err := ghaction.LoadContext(os.Getenv, os.ReadFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // exit 2
		return
	}
	if err := ghaction.CheckForkSafety(gh, in.AllowForkPRs); err != nil {
		a.Errorf("%s", err.Error()) // exit 3
		return
	}

	// ... run the workload, write the run records and the HTML report, render markdown ...
	markdown := ghaction.Marker("gate") + "\n### slogate: pass\n"

	if err := ghaction.WriteSummary(a, markdown); err != nil && !errors.Is(err, ghaction.ErrNoEnvFile) {
		a.Warningf("%s", err.Error())
	}
	out := ghaction.Outputs{Verdict: "pass"}
	if in.Comment && gh.PRNumber > 0 {
		p, err := ghaction.NewPublisher(in.Token, gh.APIURL, nil)
		if err == nil {
			p.Owner, p.Repo = gh.Owner, gh.Repo
			out.CommentURL, _, err = p.Upsert(context.Background(), gh.PRNumber, ghaction.Marker("gate"), markdown)
		}
		switch {
		case ghaction.IsWarning(err):
			a.Warningf("%s", err.Error())
		case err != nil:
			a.Errorf("%s", err.Error()) // exit 3
		}
	}
	if err := ghaction.SetOutputs(a, out); err != nil && !errors.Is(err, ghaction.ErrNoEnvFile) {
		a.Warningf("%s", err.Error())
	}
}
