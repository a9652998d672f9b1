package ghaction

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v66/github"
)

var (
	marker = Marker("gate")
	bodyV1 = marker + "\n### slogate: pass\n"
	bodyV2 = marker + "\n### slogate: fail\n"
)

const (
	listPath   = "repos/acme/serving/issues/7/comments"
	listQuery1 = "per_page=100"
)

func listCall(page int) apiCall {
	q := listQuery1
	if page > 1 {
		q = fmt.Sprintf("page=%d&per_page=100", page)
	}
	return apiCall{Method: "GET", Path: listPath, Query: q}
}

func createCall(body string) apiCall {
	return apiCall{Method: "POST", Path: listPath, Body: map[string]any{"body": body}}
}

func editCall(id int64, body string) apiCall {
	return apiCall{Method: "PATCH", Path: fmt.Sprintf("repos/acme/serving/issues/comments/%d", id), Body: map[string]any{"body": body}}
}

var userCall = apiCall{Method: "GET", Path: "user"}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func checkCalls(t *testing.T, f *fakeGitHub, want []apiCall) {
	t.Helper()
	got, _ := f.snapshot()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}

func checkSlept(t *testing.T, slept *[]time.Duration, want []time.Duration) {
	t.Helper()
	if d := cmp.Diff(want, *slept); d != "" {
		t.Errorf("sleeps (-want +got):\n%s", d)
	}
}

func TestUpsertCreatesWhenNoneExists(t *testing.T) {
	f := newFake(t)
	f.login = "slogate-bot"
	f.addComment("alice", "LGTM")
	p, slept := f.publisher(t)

	url, created, err := p.Upsert(testCtx(t), fakePR, marker, bodyV1)
	if err != nil {
		t.Fatal(err)
	}
	if !created || url != commentURL(1002) {
		t.Errorf("got (%q, %v), want (%q, true)", url, created, commentURL(1002))
	}
	checkCalls(t, f, []apiCall{userCall, listCall(1), createCall(bodyV1)})
	checkSlept(t, slept, nil)
}

func TestUpsertFollowsPaginationAndUpdatesOurs(t *testing.T) {
	f := newFake(t)
	f.login = "slogate-bot"
	f.pageSize = 2 // 6 comments: 3 pages, ours on page 2
	f.addComment("alice", "first")
	f.addComment("bob", "second")
	f.addComment("carol", "third")
	ours := f.addComment("slogate-bot", bodyV1)
	f.addComment("alice", "fifth")
	f.addComment("bob", "sixth")
	p, _ := f.publisher(t)

	url, created, err := p.Upsert(testCtx(t), fakePR, marker, bodyV2)
	if err != nil {
		t.Fatal(err)
	}
	if created || url != commentURL(ours) {
		t.Errorf("got (%q, %v), want (%q, false)", url, created, commentURL(ours))
	}
	// Every page is read, even after ours is found: a duplicate further on must be seen.
	checkCalls(t, f, []apiCall{userCall, listCall(1), listCall(2), listCall(3), editCall(ours, bodyV2)})
	_, cs := f.snapshot()
	if cs[3].Body != bodyV2 {
		t.Errorf("our comment was not updated: %q", cs[3].Body)
	}
}

func TestUpsertLeavesLookAlikeByAnotherAuthor(t *testing.T) {
	f := newFake(t)
	f.login = "slogate-bot"
	quote := "> " + bodyV1 + "\nwhy did this fail?"
	lookAlike := f.addComment("reviewer", quote)
	p, _ := f.publisher(t)

	url, created, err := p.Upsert(testCtx(t), fakePR, marker, bodyV2)
	if err != nil {
		t.Fatal(err)
	}
	if !created || url == commentURL(lookAlike) {
		t.Errorf("got (%q, %v): want a new comment of ours", url, created)
	}
	checkCalls(t, f, []apiCall{userCall, listCall(1), createCall(bodyV2)})
	_, cs := f.snapshot()
	if cs[0].Body != quote {
		t.Errorf("the look-alike was changed: %q", cs[0].Body)
	}
}

func TestUpsertTwiceNeverDuplicates(t *testing.T) {
	f := newFake(t)
	f.login = "slogate-bot"
	p, _ := f.publisher(t)
	ctx := testCtx(t)

	url1, created1, err := p.Upsert(ctx, fakePR, marker, bodyV1)
	if err != nil {
		t.Fatal(err)
	}
	url2, created2, err := p.Upsert(ctx, fakePR, marker, bodyV2)
	if err != nil {
		t.Fatal(err)
	}
	if !created1 || created2 || url1 != url2 {
		t.Errorf("first (%q, %v), second (%q, %v): want one comment created then updated", url1, created1, url2, created2)
	}
	// The identity is looked up once per Publisher.
	checkCalls(t, f, []apiCall{userCall, listCall(1), createCall(bodyV1), listCall(1), editCall(1001, bodyV2)})
	_, cs := f.snapshot()
	if len(cs) != 1 || cs[0].Body != bodyV2 {
		t.Errorf("comments: %+v, want exactly one with the second body", cs)
	}
}

func TestUpsertIdentity(t *testing.T) {
	tests := []struct {
		name      string
		login     string // what GET /user answers; "" → 403 as for GITHUB_TOKEN
		author    string // Publisher.Author override
		existing  string // author of the comment already there
		wantCalls []apiCall
		wantEdit  bool
	}{
		// A personal or app-user token: /user names it; logins compare case-insensitively.
		{"user token, case differs", "slogate-bot", "", "Slogate-Bot",
			[]apiCall{userCall, listCall(1), editCall(1001, bodyV2)}, true},
		// The workflow's GITHUB_TOKEN: /user answers 403 and the author is github-actions[bot].
		{"GITHUB_TOKEN falls back to github-actions[bot]", "", "", "github-actions[bot]",
			[]apiCall{userCall, listCall(1), editCall(1001, bodyV2)}, true},
		// The same fallback must not adopt a comment by a person.
		{"GITHUB_TOKEN does not adopt a person's comment", "", "", "alice",
			[]apiCall{userCall, listCall(1), createCall(bodyV2)}, false},
		// An explicit Author skips /user entirely (an app installation token cannot call it).
		{"Author override", "", "my-app[bot]", "my-app[bot]",
			[]apiCall{listCall(1), editCall(1001, bodyV2)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			f.login = tt.login
			if tt.author != "" {
				f.login = tt.author // the fake writes as the token's identity
			}
			f.comments = []fakeComment{{ID: 1001, Login: tt.existing, Body: bodyV1}}
			f.nextID = 1001
			p, _ := f.publisher(t)
			p.Author = tt.author
			_, created, err := p.Upsert(testCtx(t), fakePR, marker, bodyV2)
			if err != nil {
				t.Fatal(err)
			}
			if created == tt.wantEdit {
				t.Errorf("created = %v, want %v", created, !tt.wantEdit)
			}
			checkCalls(t, f, tt.wantCalls)
		})
	}
}

func TestUpsertRetries(t *testing.T) {
	var (
		e502      = fault{status: 502, body: `{"message":"Bad Gateway"}`}
		secondary = `{"message":"You have exceeded a secondary rate limit","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`
	)
	reset := time.Now().Add(-10 * time.Second).Unix()
	tests := []struct {
		name      string
		method    string
		path      string
		faults    []fault
		now       time.Time // Publisher.Now; zero for the real clock
		wantSleep []time.Duration
		wantCalls []apiCall
	}{
		// A transient 502 on a read: retried after the first backoff.
		{"502 then success", "GET", listPath, []fault{e502}, time.Time{},
			[]time.Duration{time.Second}, []apiCall{userCall, listCall(1), listCall(1), createCall(bodyV1)}},
		// Two 5xx in a row: the backoff doubles.
		{"two 5xx back off 1s then 2s", "GET", listPath, []fault{e502, {status: 503}}, time.Time{},
			[]time.Duration{time.Second, 2 * time.Second}, []apiCall{userCall, listCall(1), listCall(1), listCall(1), createCall(bodyV1)}},
		// A secondary limit sent as 429 with Retry-After: the wait is exactly what GitHub asked.
		{"429 with Retry-After", "GET", listPath, []fault{{status: 429, header: map[string]string{"Retry-After": "7"}, body: secondary}}, time.Time{},
			[]time.Duration{7 * time.Second}, []apiCall{userCall, listCall(1), listCall(1), createCall(bodyV1)}},
		// A 403 with Retry-After that go-github does not type as a secondary limit.
		{"403 with Retry-After", "GET", listPath, []fault{{status: 403, header: map[string]string{"Retry-After": "5"}, body: `{"message":"slow down"}`}}, time.Time{},
			[]time.Duration{5 * time.Second}, []apiCall{userCall, listCall(1), listCall(1), createCall(bodyV1)}},
		// go-github's *AbuseRateLimitError without Retry-After: GitHub's guidance is a minute.
		{"secondary limit without Retry-After waits a minute", "GET", listPath, []fault{{status: 403, body: secondary}}, time.Time{},
			[]time.Duration{time.Minute}, []apiCall{userCall, listCall(1), listCall(1), createCall(bodyV1)}},
		// go-github's *RateLimitError: the wait runs to the reset (plus a second of margin)
		// on the Publisher's clock. The reset is in the real past so that go-github's own
		// client-side gate, which reads the real clock, lets the retry through.
		{"primary rate limit waits for the reset", "GET", listPath,
			[]fault{{status: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Limit": "5000", "X-RateLimit-Reset": fmt.Sprint(reset)}, body: `{"message":"API rate limit exceeded"}`}},
			time.Unix(reset-10, 0), []time.Duration{11 * time.Second}, []apiCall{userCall, listCall(1), listCall(1), createCall(bodyV1)}},
		// A create answered 502 that landed anyway: listed again, found, updated: no duplicate.
		{"create 502 that landed is not duplicated", "POST", listPath, []fault{{status: 502, apply: true}}, time.Time{},
			[]time.Duration{time.Second}, []apiCall{userCall, listCall(1), createCall(bodyV1), listCall(1), editCall(1001, bodyV1)}},
		// A create answered 502 that did not land: listed again, then created once.
		{"create 502 that did not land is created once", "POST", listPath, []fault{e502}, time.Time{},
			[]time.Duration{time.Second}, []apiCall{userCall, listCall(1), createCall(bodyV1), listCall(1), createCall(bodyV1)}},
		// An update is idempotent and retried in place.
		{"update 500 retried in place", "PATCH", "repos/acme/serving/issues/comments/1001", []fault{{status: 500}}, time.Time{},
			[]time.Duration{time.Second}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			f.login = "slogate-bot"
			if tt.method == "PATCH" {
				f.addComment("slogate-bot", bodyV1)
				tt.wantCalls = []apiCall{userCall, listCall(1), editCall(1001, bodyV1), editCall(1001, bodyV1)}
			}
			for _, ft := range tt.faults {
				f.fail(tt.method, tt.path, ft)
			}
			p, slept := f.publisher(t)
			if !tt.now.IsZero() {
				p.Now = func() time.Time { return tt.now }
			}
			url, _, err := p.Upsert(testCtx(t), fakePR, marker, bodyV1)
			if err != nil {
				t.Fatal(err)
			}
			if url != commentURL(1001) {
				t.Errorf("url %q, want %q", url, commentURL(1001))
			}
			checkSlept(t, slept, tt.wantSleep)
			checkCalls(t, f, tt.wantCalls)
			if _, cs := f.snapshot(); len(cs) != 1 {
				t.Errorf("%d comments, want exactly 1: %+v", len(cs), cs)
			}
		})
	}
}

// go-github remembers a secondary limit's Retry-After and refuses further calls locally,
// on the real clock, until it passes. This test sleeps for real (1 s) to show that the
// retry honours the wait and then goes through that gate.
func TestUpsertSecondaryLimitWithRetryAfterRealWait(t *testing.T) {
	f := newFake(t)
	f.login = "slogate-bot"
	f.fail("GET", listPath, fault{status: 403, header: map[string]string{"Retry-After": "1"},
		body: `{"message":"You have exceeded a secondary rate limit","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`})
	p, _ := f.publisher(t)
	var slept []time.Duration
	p.Sleep = func(d time.Duration) {
		slept = append(slept, d)
		if d > 2*time.Second {
			t.Fatalf("asked to sleep %v", d)
		}
		time.Sleep(d)
	}
	if _, _, err := p.Upsert(testCtx(t), fakePR, marker, bodyV1); err != nil {
		t.Fatal(err)
	}
	if len(slept) == 0 || slept[0] != time.Second {
		t.Errorf("sleeps %v, want the first to be Retry-After's 1s", slept)
	}
	checkCalls(t, f, []apiCall{userCall, listCall(1), listCall(1), createCall(bodyV1)})
}

func TestUpsertFailures(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(f *fakeGitHub, p *Publisher)
		wantIs     error // errors.Is target; nil for none
		wantStatus int   // the *github.ErrorResponse status reachable through errors.As; 0 for none
		wantWarn   bool
		wantInErr  string
		wantSleep  []time.Duration
	}{
		// A fork's pull request: the token reads but cannot write; a warning, not a failure.
		{"403 on a fork is ErrReadOnlyToken", func(f *fakeGitHub, p *Publisher) { f.readOnly = true },
			ErrReadOnlyToken, 403, true, "Resource not accessible by integration", nil},
		// The pull request is gone: a plain error, not retried, not a warning.
		{"404 is a plain error", func(f *fakeGitHub, p *Publisher) { f.prGone = true },
			nil, 404, false, "404", nil},
		// 5xx that never ends: MaxRetries bounds it.
		{"5xx exhausts retries", func(f *fakeGitHub, p *Publisher) {
			p.MaxRetries = 2
			for range 3 {
				f.fail("GET", listPath, fault{status: 502})
			}
		}, nil, 502, false, "502", []time.Duration{time.Second, 2 * time.Second}},
		// Negative MaxRetries disables retries.
		{"retries disabled", func(f *fakeGitHub, p *Publisher) {
			p.MaxRetries = -1
			f.fail("GET", listPath, fault{status: 502})
		}, nil, 502, false, "502", nil},
		// A reset an hour away is beyond the cap: fail now, do not block the job.
		{"rate limit beyond the cap gives up at once", func(f *fakeGitHub, p *Publisher) {
			f.fail("GET", listPath, fault{status: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": fmt.Sprint(time.Now().Add(time.Hour).Unix())}, body: `{"message":"API rate limit exceeded"}`})
		}, nil, 0, false, "more than the 1m0s slogate waits", nil},
		// Retry-After beyond the cap: same.
		{"Retry-After beyond the cap gives up at once", func(f *fakeGitHub, p *Publisher) {
			f.fail("GET", listPath, fault{status: 429, header: map[string]string{"Retry-After": "120"}})
		}, nil, 429, false, "GitHub asks to wait 2m0s", nil},
		// Bad credentials: not retried, and /user's 401 is not mistaken for the 403 fallback.
		{"401 on /user", func(f *fakeGitHub, p *Publisher) {
			f.fail("GET", "user", fault{status: 401, body: `{"message":"Bad credentials"}`})
		}, nil, 401, false, "Bad credentials", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			p, slept := f.publisher(t)
			tt.setup(f, p)
			url, created, err := p.Upsert(testCtx(t), fakePR, marker, bodyV1)
			if err == nil {
				t.Fatalf("no error; url %q created %v", url, created)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v: not %v", err, tt.wantIs)
			}
			if tt.wantIs == nil && errors.Is(err, ErrReadOnlyToken) {
				t.Errorf("error %v: wrongly marked read-only", err)
			}
			var er *github.ErrorResponse
			if tt.wantStatus != 0 && (!errors.As(err, &er) || er.Response.StatusCode != tt.wantStatus) {
				t.Errorf("error %v: want a *github.ErrorResponse with status %d", err, tt.wantStatus)
			}
			if IsWarning(err) != tt.wantWarn {
				t.Errorf("IsWarning(%v) = %v, want %v", err, !tt.wantWarn, tt.wantWarn)
			}
			if !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantInErr)
			}
			checkSlept(t, slept, tt.wantSleep)
		})
	}
}

func TestUpsertRateLimitErrorTypeKept(t *testing.T) {
	f := newFake(t)
	f.login = "slogate-bot"
	f.fail("GET", listPath, fault{status: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": fmt.Sprint(time.Now().Add(time.Hour).Unix())}, body: `{"message":"API rate limit exceeded"}`})
	p, _ := f.publisher(t)
	_, _, err := p.Upsert(testCtx(t), fakePR, marker, bodyV1)
	var rle *github.RateLimitError
	if !errors.As(err, &rle) {
		t.Fatalf("error %v: the *github.RateLimitError is not reachable", err)
	}
}

func TestUpsertDuplicatesUpdatesOldest(t *testing.T) {
	f := newFake(t)
	f.login = "slogate-bot"
	// Listed out of id order: the oldest is chosen by id, not by position.
	f.comments = []fakeComment{
		{ID: 1009, Login: "slogate-bot", Body: bodyV1},
		{ID: 1005, Login: "slogate-bot", Body: bodyV1},
	}
	f.nextID = 1009
	p, _ := f.publisher(t)
	url, created, err := p.Upsert(testCtx(t), fakePR, marker, bodyV2)
	var dup *DuplicateCommentsError
	if !errors.As(err, &dup) || !IsWarning(err) {
		t.Fatalf("error %v: want a *DuplicateCommentsError warning", err)
	}
	if dup.Kept != 1005 || !cmp.Equal(dup.Others, []int64{1009}) {
		t.Errorf("kept %d, others %v", dup.Kept, dup.Others)
	}
	if created || url != commentURL(1005) {
		t.Errorf("got (%q, %v)", url, created)
	}
	checkCalls(t, f, []apiCall{userCall, listCall(1), editCall(1005, bodyV2)})
	_, cs := f.snapshot()
	if len(cs) != 2 || cs[0].Body != bodyV1 {
		t.Errorf("the newer duplicate must be left as is: %+v", cs)
	}
}

func TestUpsertRefusesBadArguments(t *testing.T) {
	tests := []struct {
		name    string
		pr      int
		marker  string
		body    string
		wantErr string
	}{
		// A body without its marker could never be found again: a duplicate every run.
		{"body lacks the marker", fakePR, marker, "### slogate: pass", "does not contain its marker"},
		// A marker that is not an HTML comment would show in the comment.
		{"marker not an HTML comment", fakePR, "slogate:gate", "slogate:gate body", "want a one-line HTML comment"},
		// An empty marker matches every comment.
		{"empty marker", fakePR, "", "anything", "want a one-line HTML comment"},
		// Over GitHub's limit: the renderer truncates; this is the guard.
		{"body over 65,536 characters", fakePR, marker, marker + strings.Repeat("é", MaxCommentChars), "over GitHub's limit of 65536"},
		// No pull request number: a push event reached the comment path.
		{"no pull request", 0, marker, bodyV1, "invalid pull request number 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			p, _ := f.publisher(t)
			_, _, err := p.Upsert(testCtx(t), tt.pr, tt.marker, tt.body)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
			checkCalls(t, f, nil)
		})
	}
}

func TestBodyAtTheLimitIsAccepted(t *testing.T) {
	f := newFake(t)
	f.login = "slogate-bot"
	p, _ := f.publisher(t)
	// Exactly 65,536 characters, more bytes than that: the limit counts characters.
	body := marker + strings.Repeat("é", MaxCommentChars-len(marker))
	if _, _, err := p.Upsert(testCtx(t), fakePR, marker, body); err != nil {
		t.Fatal(err)
	}
}

func TestMarker(t *testing.T) {
	tests := []struct{ key, want string }{
		// The plain case.
		{"gate", "<!-- slogate:sticky:gate -->"},
		// Paths and dots are kept: keys are often workload file names.
		{"bench/llama-8b.yaml", "<!-- slogate:sticky:bench/llama-8b.yaml -->"},
		// "--" would end the comment in some parsers: broken up.
		{"a--b---c", "<!-- slogate:sticky:a-_b-_-c -->"},
		// Spaces and '>' would change what the comment hides.
		{"x y>z", "<!-- slogate:sticky:x_y_z -->"},
		// No key still gives a valid marker.
		{"", "<!-- slogate:sticky:default -->"},
	}
	for _, tt := range tests {
		got := Marker(tt.key)
		if got != tt.want {
			t.Errorf("Marker(%q) = %q, want %q", tt.key, got, tt.want)
		}
		if err := checkMarker(got); err != nil {
			t.Errorf("Marker(%q) is refused by Upsert: %v", tt.key, err)
		}
	}
}

func TestNewPublisher(t *testing.T) {
	tests := []struct {
		name, token, api, wantBase, wantErr string
	}{
		// GITHUB_API_URL on github.com has no trailing slash; go-github needs one.
		{"github.com", "t", "https://api.github.com", "https://api.github.com/", ""},
		// GHES: the /api/v3 path must survive.
		{"GHES", "t", "https://ghe.example.com/api/v3", "https://ghe.example.com/api/v3/", ""},
		// Already slashed: not doubled.
		{"trailing slash kept", "t", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/", ""},
		// Unset: github.com.
		{"default", "t", "", "https://api.github.com/", ""},
		// Without a token nothing can be posted: say how to pass one.
		{"no token", "", "https://api.github.com", "", "github-token is empty"},
		// A relative URL would resolve against nothing.
		{"relative URL", "t", "api.github.com", "", "want an absolute http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPublisher(tt.token, tt.api, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Client.BaseURL.String(); got != tt.wantBase {
				t.Errorf("BaseURL %q, want %q", got, tt.wantBase)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"7", 7 * time.Second, true}, // delay-seconds, what GitHub sends
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second, true}, // HTTP-date, allowed by RFC 9110
		{"", 0, false},     // absent
		{"soon", 0, false}, // garbage is not a wait
		{"-3", 0, false},   // negative is not a wait
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.v, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

// TestUpdateStickyNeverCreates: comment mode not-pass on a pass updates our comment where
// one exists (a fixed pull request must not keep saying "fail") and creates none where
// there is none.
func TestUpdateStickyNeverCreates(t *testing.T) {
	f := newFake(t)
	f.login = "slogate-bot"
	f.addComment("alice", "LGTM")
	p, _ := f.publisher(t)
	url, err := p.UpdateSticky(testCtx(t), fakePR, marker, bodyV1)
	if err != nil || url != "" {
		t.Errorf("no sticky comment: got (%q, %v), want nothing done", url, err)
	}
	checkCalls(t, f, []apiCall{userCall, listCall(1)})

	f = newFake(t)
	f.login = "slogate-bot"
	ours := f.addComment("slogate-bot", bodyV2)
	p, _ = f.publisher(t)
	url, err = p.UpdateSticky(testCtx(t), fakePR, marker, bodyV1)
	if err != nil || url != commentURL(ours) {
		t.Errorf("a sticky comment: got (%q, %v), want it updated", url, err)
	}
	checkCalls(t, f, []apiCall{userCall, listCall(1), editCall(ours, bodyV1)})
}
