package kdctest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Realm is the test realm.
const Realm = "ZKBRIDGE.TEST"

// Binaries the KDC needs (Debian krb5-kdc, krb5-admin-server, krb5-user).
var (
	krb5kdc     = "/usr/sbin/krb5kdc"
	kdb5Util    = "/usr/sbin/kdb5_util"
	kadminLocal = "/usr/sbin/kadmin.local"
	kinit       = "/usr/bin/kinit"
)

// Missing names the KDC binaries that are absent ("" when all are here).
func Missing() string {
	var miss []string
	for _, p := range []string{krb5kdc, kdb5Util, kadminLocal, kinit} {
		if _, err := os.Stat(p); err != nil {
			miss = append(miss, p)
		}
	}
	return strings.Join(miss, " ")
}

// KDC is a running throwaway KDC.
type KDC struct {
	Dir  string
	Port int
	// Conf is the krb5.conf clients use (KRB5_CONFIG,
	// -Djava.security.krb5.conf).
	Conf   string
	cmd    *exec.Cmd
	exited chan struct{}
	env    []string
}

// Start creates a realm in dir and runs krb5kdc on a free loopback port
// (another, up to three times, when the port was taken meanwhile).
func Start(dir string) (*KDC, error) {
	if m := Missing(); m != "" {
		return nil, fmt.Errorf("kdctest: missing %s (run scripts/install-zookeeper.sh)", m)
	}
	k := &KDC{Dir: dir, Conf: filepath.Join(dir, "krb5.conf")}
	k.env = append(os.Environ(), "KRB5_CONFIG="+k.Conf, "KRB5_KDC_PROFILE="+filepath.Join(dir, "kdc.conf"), "KRB5CCNAME=FILE:"+filepath.Join(dir, "ccache"))
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := pickPort()
		if err != nil {
			return nil, err
		}
		k.Port = port
		if err := k.writeConf(); err != nil {
			return nil, err
		}
		if attempt == 0 {
			if err := k.run(kdb5Util, "create", "-s", "-r", Realm, "-P", "throwaway-master-key"); err != nil {
				return nil, err
			}
		}
		if lastErr = k.startKDC(); lastErr == nil {
			return k, nil
		}
	}
	return nil, lastErr
}

func (k *KDC) writeConf() error {
	krb5 := fmt.Sprintf(`[libdefaults]
  default_realm = %[1]s
  dns_lookup_kdc = false
  dns_lookup_realm = false
  dns_canonicalize_hostname = false
  rdns = false
  udp_preference_limit = 1
  ticket_lifetime = 1h
  default_ccache_name = FILE:%[2]s/ccache
[realms]
  %[1]s = {
    kdc = 127.0.0.1:%[3]d
  }
[domain_realm]
  localhost = %[1]s
`, Realm, k.Dir, k.Port)
	kdc := fmt.Sprintf(`[kdcdefaults]
  kdc_listen = 127.0.0.1:%[3]d
  kdc_tcp_listen = 127.0.0.1:%[3]d
[realms]
  %[1]s = {
    database_name = %[2]s/principal
    key_stash_file = %[2]s/stash
    acl_file = %[2]s/kadm5.acl
    max_life = 1h
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  }
[logging]
  kdc = FILE:%[2]s/kdc.log
`, Realm, k.Dir, k.Port)
	for name, text := range map[string]string{"krb5.conf": krb5, "kdc.conf": kdc, "kadm5.acl": ""} {
		if err := os.WriteFile(filepath.Join(k.Dir, name), []byte(text), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// startKDC runs krb5kdc and waits until it logs that its sockets are up.
func (k *KDC) startKDC() error {
	logPath := filepath.Join(k.Dir, "kdc.log")
	_ = os.Remove(logPath)
	out, err := os.Create(filepath.Join(k.Dir, "krb5kdc.out"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(krb5kdc, "-n", "-r", Realm)
	cmd.Env = k.env
	// Dies with the test binary even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kdctest: krb5kdc: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	k.cmd, k.exited = cmd, exited
	deadline := time.Now().Add(15 * time.Second)
	for {
		if log, _ := os.ReadFile(logPath); strings.Contains(string(log), "commencing operation") {
			return nil
		}
		select {
		case <-exited:
			k.cmd = nil
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("kdctest: krb5kdc on port %d exited:\n%s", k.Port, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			k.Stop()
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("kdctest: krb5kdc not serving on port %d after 15 s:\n%s", k.Port, log)
		}
	}
}

// Stop ends the KDC.
func (k *KDC) Stop() {
	if k.cmd != nil && k.cmd.Process != nil {
		_ = k.cmd.Process.Kill()
		<-k.exited
		k.cmd = nil
	}
}

// Env is the environment of a Kerberos client of this realm (KRB5_CONFIG,
// a credential cache in the directory).
func (k *KDC) Env() []string { return append([]string(nil), k.env...) }

// AddPrincipal creates name (without realm) with a random key and exports
// it to a keytab, whose path it returns.
func (k *KDC) AddPrincipal(name string) (string, error) {
	if err := k.run(kadminLocal, "-r", Realm, "-q", "addprinc -randkey "+name); err != nil {
		return "", err
	}
	return k.Rekey(name, strings.NewReplacer("/", "_", "@", "_").Replace(name)+".keytab")
}

// Rekey gives name a new random key and exports it to the keytab file
// (in the directory); keytabs exported before hold a stale key.
func (k *KDC) Rekey(name, file string) (string, error) {
	kt := filepath.Join(k.Dir, file)
	if err := k.run(kadminLocal, "-r", Realm, "-q", "ktadd -k "+kt+" "+name); err != nil {
		return "", err
	}
	if _, err := os.Stat(kt); err != nil {
		return "", fmt.Errorf("kdctest: ktadd wrote no keytab: %w", err)
	}
	return kt, nil
}

// Kinit gets name's tickets from its keytab into the directory's cache.
func (k *KDC) Kinit(name, keytab string) error {
	return k.run(kinit, "-k", "-t", keytab, name+"@"+Realm)
}

func (k *KDC) run(bin string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = k.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kdctest: %s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	// kadmin.local -q exits 0 when its query fails: read what it says.
	if bin == kadminLocal {
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, " while ") || strings.Contains(line, "does not exist") || strings.HasPrefix(line, "kadmin.local:") {
				return fmt.Errorf("kdctest: kadmin.local %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
			}
		}
	}
	return nil
}

// pickPort chooses the KDC's port (tests replace it).
var pickPort = freePort

// freePort is a loopback port free for both TCP and UDP right now.
func freePort() (int, error) {
	for i := 0; i < 20; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, uerr := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if uerr == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, errors.New("kdctest: no free loopback port for TCP and UDP")
}
