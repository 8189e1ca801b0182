package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// The JAAS file comes from zoo.cfg, $SERVER_JVMFLAGS (as zkServer.sh users
// set it) or --jaas, the later overriding the earlier.
func TestJAASFromZooCfgEnvAndFlag(t *testing.T) {
	dir := t.TempDir()
	jaas := map[string]string{}
	for _, name := range []string{"cfg", "env", "flag"} {
		p := filepath.Join(dir, name+".jaas")
		if err := os.WriteFile(p, []byte("Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_"+name+"=\"pw\"; };\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		jaas[name] = p
	}
	cfgFile := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgFile, []byte("dataDir="+dir+"\nclientPort=2999\njava.security.auth.login.config="+jaas["cfg"]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SERVER_JVMFLAGS", "")
	if got := loadWith(t, "--config", cfgFile).Auth.JAASFile; got != jaas["cfg"] {
		t.Errorf("zoo.cfg: %q", got)
	}
	t.Setenv("SERVER_JVMFLAGS", "-Xmx512m -Djava.security.auth.login.config="+jaas["env"]+" -Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
	got := loadWith(t, "--config", cfgFile)
	if got.Auth.JAASFile != jaas["env"] || !got.Auth.SASLScheme() {
		t.Errorf("SERVER_JVMFLAGS: %+v", got.Auth)
	}
	if got := loadWith(t, "--config", cfgFile, "--jaas", jaas["flag"]).Auth.JAASFile; got != jaas["flag"] {
		t.Errorf("--jaas: %q", got)
	}
}
