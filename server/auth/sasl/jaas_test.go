package sasl

import (
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	const text = `
/* ZooKeeper server */
Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_super="adminsecret"   // the super user
  user_bob="bob \"quoted\" secret"
  user_plain=bare;
};
# client side
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="bob"
  password="bobsecret";
};
`
	j, err := ParseJAAS(text)
	if err != nil {
		t.Fatal(err)
	}
	u, err := j.Users(DefaultServerSection)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"super": "adminsecret", "bob": `bob "quoted" secret`, "plain": "bare"}
	if len(u) != len(want) {
		t.Fatalf("users %q, want %q", u, want)
	}
	for k, v := range want {
		if u[k] != v {
			t.Fatalf("user %s: %q, want %q", k, u[k], v)
		}
	}
	if c, _ := j.Users("Client"); len(c) != 0 {
		t.Fatalf("Client section has no user_ options, got %q", c)
	}
	if _, err := j.Users("QuorumServer"); err == nil || !strings.Contains(err.Error(), "Server, Client") && !strings.Contains(err.Error(), "Client, Server") {
		t.Fatalf("missing section: %v", err)
	}
}

func TestParseJAASErrors(t *testing.T) {
	for _, bad := range []string{
		`Server { m required a="b" }`,       // no ; after the module
		`Server { m required a="b"; }`,      // no ; after the section
		`Server { m mandatory a="b"; };`,    // bad flag
		`Server { m required a "b"; };`,     // no =
		`Server { m required a="b; };`,      // unterminated string
		`Server /* { m required a="b"; }; `, // unterminated comment
		`{ m required; };`,                  // no name
	} {
		if _, err := ParseJAAS(bad); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}
