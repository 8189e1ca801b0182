package sasl

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// kerberosName is KerberosName's parser: service[/host]@realm, or a bare
// name without '@'.
var kerberosName = regexp.MustCompile(`^([^/@]*)(/([^/@]*))?@([^/@]*)$`)

// Principal is how ZooKeeper's SaslServerCallbackHandler turns an
// authenticated name into the id of `sasl:<id>`: the name is read as a
// Kerberos principal service[/host][@realm]; the host is kept unless
// removeHost (zookeeper.kerberos.removeHostFromPrincipal=true), the realm
// unless removeRealm (…removeRealmFromPrincipal=true). ZooKeeper maps the
// short name through Kerberos auth_to_local rules as well; zkbridge applies
// the DEFAULT rule only (the service part is the short name).
func Principal(name string, removeHost, removeRealm bool) (string, error) {
	m := kerberosName.FindStringSubmatch(name)
	if m == nil {
		if strings.Contains(name, "@") {
			return "", fmt.Errorf("malformed Kerberos name %q", name)
		}
		return name, nil
	}
	id := m[1]
	if m[2] != "" && !removeHost {
		id += "/" + m[3]
	}
	if !removeRealm {
		id += "@" + m[4]
	}
	return id, nil
}

// DefaultRuleMaps reports whether ZooKeeper's DEFAULT auth_to_local rule
// gives name a short name: a name without a realm always, one with a
// realm only when it is the default realm of ZooKeeper's krb5.conf
// (KerberosName.getShortName). For any other name ZooKeeper leaves the
// SASL server's authorization id as the identity, unstripped.
func DefaultRuleMaps(name, defaultRealm string) bool {
	m := kerberosName.FindStringSubmatch(name)
	return m == nil || m[4] == defaultRealm
}

// DefaultRealm reads default_realm from the [libdefaults] section of a
// krb5.conf; "" when the file or the setting is missing, as ZooKeeper's
// KerberosName falls back to without a Kerberos configuration.
func DefaultRealm(krb5conf string) string {
	raw, err := os.ReadFile(krb5conf)
	if err != nil {
		return ""
	}
	section := ""
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		if section != "libdefaults" {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "default_realm" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
