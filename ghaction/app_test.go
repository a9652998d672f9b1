package ghaction

import "testing"

// A GitHub App installation token: GET /user answers 403, GraphQL's viewer names the
// bot. Its own comment is found and updated, not duplicated on every run.
func TestUpsertWithAppInstallationToken(t *testing.T) {
	f := newFake(t)
	f.app = "my-app[bot]"
	f.addComment("github-actions[bot]", marker+"\nsomeone else's look-alike")
	ours := f.addComment("my-app[bot]", bodyV1)
	p, _ := f.publisher(t)
	url, created, err := p.Upsert(testCtx(t), fakePR, marker, bodyV2)
	if err != nil {
		t.Fatal(err)
	}
	if created || url != commentURL(ours) {
		t.Errorf("got (%q, %v), want (%q, false): the App's own comment was not found", url, created, commentURL(ours))
	}
	_, cs := f.snapshot()
	if len(cs) != 2 || cs[1].Body != bodyV2 || cs[0].Body == bodyV2 {
		t.Errorf("comments after the update: %+v", cs)
	}
}
