package shell

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/zkbridge/zkbridge/server/auth/sasl"
)

// jvmProp finds -Dname=value in $CLIENT_JVMFLAGS.
func jvmProp(name string) string {
	re := regexp.MustCompile(`-D` + regexp.QuoteMeta(name) + `=(\S+)`)
	if m := re.FindStringSubmatch(os.Getenv("CLIENT_JVMFLAGS")); m != nil {
		return m[1]
	}
	return ""
}

// clientProp is a client property from the -client-configuration file or,
// failing that, $CLIENT_JVMFLAGS, else def.
func clientProp(props map[string]string, name, def string) string {
	if v := props[name]; v != "" {
		return v
	}
	if v := jvmProp(name); v != "" {
		return v
	}
	return def
}

// kerberosLogin is the GSSAPI side of a JAAS Client section with
// com.sun.security.auth.module.Krb5LoginModule, as the Java client reads
// it: the client's key from keyTab (useKeyTab=true) or its tickets from
// the credential cache (useTicketCache=true: ticketCache, $KRB5CCNAME or
// /tmp/krb5cc_<uid>), the realm's KDC from java.security.krb5.conf
// (default /etc/krb5.conf). It returns what gets a service ticket for
// zookeeper/<host> (zookeeper.sasl.client.username names another
// service; the host is canonicalized unless
// zookeeper.sasl.client.canonicalize.hostname=false).
func kerberosLogin(m sasl.LoginModule, props map[string]string) (func(host string) (*sasl.GSSAPIClient, error), error) {
	confPath := clientProp(props, "java.security.krb5.conf", "/etc/krb5.conf")
	cfg, err := krbconfig.Load(confPath)
	if err != nil {
		return nil, fmt.Errorf("Kerberos configuration %s: %w", confPath, err)
	}
	var cl *client.Client
	switch {
	case m.Options["useKeyTab"] == "true":
		if m.Options["keyTab"] == "" || m.Options["principal"] == "" {
			return nil, fmt.Errorf("%s with useKeyTab=true needs keyTab=\"…\" and principal=\"…\"", sasl.KerberosLoginModule)
		}
		kt, err := keytab.Load(m.Options["keyTab"])
		if err != nil {
			return nil, fmt.Errorf("keytab %s: %w", m.Options["keyTab"], err)
		}
		name, realm := types.ParseSPNString(m.Options["principal"])
		if realm == "" {
			realm = cfg.LibDefaults.DefaultRealm
		}
		cl = client.NewWithKeytab(name.PrincipalNameString(), realm, kt, cfg, client.DisablePAFXFAST(true))
	case m.Options["useTicketCache"] == "true":
		path := m.Options["ticketCache"]
		if path == "" {
			path = strings.TrimPrefix(os.Getenv("KRB5CCNAME"), "FILE:")
		}
		if path == "" {
			path = fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
		}
		cc, err := credentials.LoadCCache(path)
		if err != nil {
			return nil, fmt.Errorf("Kerberos ticket cache %s (run kinit): %w", path, err)
		}
		if cl, err = client.NewFromCCache(cc, cfg, client.DisablePAFXFAST(true)); err != nil {
			return nil, fmt.Errorf("Kerberos ticket cache %s: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("%s: zkbridge shell needs useKeyTab=true with keyTab and principal, or useTicketCache=true", sasl.KerberosLoginModule)
	}
	service := clientProp(props, "zookeeper.sasl.client.username", "zookeeper")
	canonicalize := clientProp(props, "zookeeper.sasl.client.canonicalize.hostname", "true") != "false"
	var once sync.Once
	var loginErr error
	return func(host string) (*sasl.GSSAPIClient, error) {
		once.Do(func() {
			if m.Options["useKeyTab"] == "true" {
				loginErr = cl.Login()
			}
		})
		if loginErr != nil {
			return nil, fmt.Errorf("Kerberos login: %w", loginErr)
		}
		if canonicalize {
			host = canonicalHost(host)
		}
		spn := service + "/" + host
		tkt, key, err := cl.GetServiceTicket(spn)
		if err != nil {
			return nil, fmt.Errorf("Kerberos service ticket for %s: %w", spn, err)
		}
		return &sasl.GSSAPIClient{CName: cl.Credentials.CName(), Realm: cl.Credentials.Domain(), Ticket: tkt, SessionKey: key}, nil
	}, nil
}

// canonicalHost is Java's InetAddress.getCanonicalHostName of the host's
// first address: its reverse name, or the host as given when there is
// none.
func canonicalHost(host string) string {
	addrs, err := net.LookupHost(host)
	if err != nil || len(addrs) == 0 {
		return host
	}
	names, err := net.LookupAddr(addrs[0])
	if err != nil || len(names) == 0 {
		return host
	}
	return strings.TrimSuffix(names[0], ".")
}
