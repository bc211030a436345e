package hostsnap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// takeFirewall records nftables tables and iptables rules of the root
// namespace. Every front end is optional on a host, so a missing tool is
// recorded as an entry rather than failing the snapshot.
func takeFirewall(ctx context.Context, s *Snapshot) error {
	// -s (stateless) leaves out counter values, quotas and set element
	// expiry, which move on their own while the ruleset stays the same.
	out, err := run(ctx, "nft", "-s", "list", "ruleset")
	switch {
	case isNotInstalled(err):
		s.Firewall = append(s.Firewall, err.Error())
	case err != nil:
		return err
	default:
		s.Firewall = append(s.Firewall, parseNftTables(string(out))...)
	}

	// Both back ends are listed because a component using one of them does
	// not see (or clean up) rules installed through the other.
	for _, tool := range []string{
		"iptables-legacy-save", "ip6tables-legacy-save",
		"iptables-nft-save", "ip6tables-nft-save",
	} {
		out, err := run(ctx, tool)
		switch {
		case isNotInstalled(err):
			s.Firewall = append(s.Firewall, err.Error())
		case err != nil:
			return err
		default:
			s.Firewall = append(s.Firewall, parseIptablesSave(string(out), strings.TrimSuffix(tool, "-save"))...)
		}
	}
	return nil
}

// parseNftTables splits `nft list ruleset` output into one entry per table,
// "nft table FAMILY NAME (sha256:PREFIX)". Hashing the body instead of
// listing each rule keeps diffs short while still flagging a table whose
// chains or rules changed.
func parseNftTables(out string) []string {
	var entries []string
	var header string
	var body strings.Builder
	for _, line := range strings.Split(out, "\n") {
		switch {
		case header == "" && strings.HasPrefix(line, "table ") && strings.HasSuffix(line, "{"):
			header = strings.TrimSpace(strings.TrimSuffix(line, "{"))
			body.Reset()
		case header != "" && line == "}":
			sum := sha256.Sum256([]byte(body.String()))
			entries = append(entries, "nft "+header+" (sha256:"+hex.EncodeToString(sum[:6])+")")
			header = ""
		case header != "":
			// Only content matters; indentation changes between nft
			// versions would otherwise alter the hash.
			if l := collapseSpace(line); l != "" {
				body.WriteString(l)
				body.WriteByte('\n')
			}
		}
	}
	return entries
}

// parseIptablesSave turns iptables-save output into "PREFIX TABLE LINE"
// entries for chain policies and rules. Comment lines carry timestamps and
// "[packets:bytes]" counters change with traffic, so both are dropped.
func parseIptablesSave(out, prefix string) []string {
	var entries []string
	table := ""
	for _, raw := range strings.Split(out, "\n") {
		line := strings.TrimSpace(raw)
		switch {
		case line == "", strings.HasPrefix(line, "#"), line == "COMMIT":
		case strings.HasPrefix(line, "*"):
			table = strings.TrimPrefix(line, "*")
		default:
			entries = append(entries, prefix+" "+table+" "+stripCounters(line))
		}
	}
	return entries
}

// stripCounters removes "[N:M]" counter fields: the last field of a chain
// line and, when saved with -c, the first field of a rule line. Only those
// positions are touched so that a rule comment containing brackets survives.
func stripCounters(line string) string {
	f := strings.Fields(line)
	if len(f) > 1 && isCounter(f[0]) {
		f = f[1:]
	}
	if len(f) > 1 && strings.HasPrefix(f[0], ":") && isCounter(f[len(f)-1]) {
		f = f[:len(f)-1]
	}
	return strings.Join(f, " ")
}

func isCounter(w string) bool {
	if len(w) < 5 || w[0] != '[' || w[len(w)-1] != ']' {
		return false
	}
	nums := strings.Split(w[1:len(w)-1], ":")
	if len(nums) != 2 {
		return false
	}
	for _, n := range nums {
		if n == "" || strings.Trim(n, "0123456789") != "" {
			return false
		}
	}
	return true
}
