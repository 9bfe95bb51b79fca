package licensor

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"
)

// readRawComponents reads the five raw values the way packages/sdk/src/fingerprint.ts does on
// the same operating system, so that two SDKs on one computer produce the same fingerprint.
func readRawComponents() RawComponents {
	return RawComponents{
		machineID(),
		attempt(os.Hostname),
		primaryMAC(),
		cpuModel(),
		systemDiskID(),
	}
}

// attempt runs a reader; whatever it cannot read (missing file, no permission, no command) is "".
func attempt(read func() (string, error)) string {
	value, err := read()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(value)
}

func readText(file string) (string, error) {
	data, err := os.ReadFile(file)
	return string(data), err
}

// capture is the first group of pattern in a command's output, "" when it fails or does not match.
func capture(pattern *regexp.Regexp, command string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, args...)
	hideWindow(cmd)
	output, err := cmd.Output()
	if err != nil {
		return ""
	}
	match := pattern.FindStringSubmatch(string(output))
	if match == nil {
		return ""
	}
	return strings.TrimSpace(match[1])
}

// primaryMAC is the MAC of the interface carrying the default route (Linux), else of the first
// usable interface by name, so the choice does not depend on the order the OS lists them in.
// Usable, as Node's os.networkInterfaces() lists them: up and running, with an IP address, not a
// loopback, and with a MAC that is not all zeros.
func primaryMAC() string {
	interfaces, err := net.Interfaces()
	if err != nil {
		return ""
	}
	if name := defaultRouteInterface(); name != "" {
		for _, iface := range interfaces {
			if iface.Name == name {
				if mac := usableMAC(iface); mac != "" {
					return mac
				}
			}
		}
	}
	sort.Slice(interfaces, func(i, j int) bool { return interfaces[i].Name < interfaces[j].Name })
	for _, iface := range interfaces {
		if mac := usableMAC(iface); mac != "" {
			return mac
		}
	}
	return ""
}

func usableMAC(iface net.Interface) string {
	if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 || !interfaceRunning(iface) {
		return ""
	}
	if addresses, err := iface.Addrs(); err != nil || len(addresses) == 0 {
		return ""
	}
	// Node reports six bytes of the link-layer address, padded with zeros when it is shorter.
	mac := make(net.HardwareAddr, 6)
	copy(mac, iface.HardwareAddr)
	if mac.String() == "00:00:00:00:00:00" {
		return ""
	}
	return mac.String()
}
