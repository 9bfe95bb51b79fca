//go:build !darwin && !windows

package licensor

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

var cpuModelPattern = regexp.MustCompile(`(?m)^model name[ \t]*:(.*)$`)

// Linux (and, as in the TypeScript SDK, any other Unix but macOS).

func machineID() string {
	if id := attempt(func() (string, error) { return readText("/etc/machine-id") }); id != "" {
		return id
	}
	return attempt(func() (string, error) { return readText("/var/lib/dbus/machine-id") })
}

// defaultRouteInterface is the interface whose destination is 0.0.0.0 in /proc/net/route.
func defaultRouteInterface() string {
	text, err := readText("/proc/net/route")
	if err != nil {
		return ""
	}
	lines := strings.Split(text, "\n")
	for _, line := range lines[1:] {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[1] == "00000000" {
			return fields[0]
		}
	}
	return ""
}

// interfaceRunning is IFF_RUNNING as getifaddrs reports it (Go 1.19 has no net.FlagRunning):
// the kernel sets it for an up interface whose operational state is up or unknown.
func interfaceRunning(iface net.Interface) bool {
	state, err := readText("/sys/class/net/" + iface.Name + "/operstate")
	if err != nil {
		return false
	}
	state = strings.TrimSpace(state)
	return state == "up" || state == "unknown"
}

// cpuModel is the text after the ":" of the first "model name" line of /proc/cpuinfo (ARM
// kernels write none: the component is then unreadable), as docs/protocol.md fixes it.
func cpuModel() string {
	text, err := readText("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	if match := cpuModelPattern.FindStringSubmatch(text); match != nil {
		return strings.TrimSpace(match[1])
	}
	return ""
}

// systemDiskID is the root filesystem's UUID (/dev/disk/by-uuid), else the serial number sysfs
// gives for its block device (VMs without udev links). Overlay roots (containers) have neither.
func systemDiskID() string {
	device, source, ok := rootMount()
	if !ok {
		return ""
	}
	const uuids = "/dev/disk/by-uuid"
	if entries, err := os.ReadDir(uuids); err == nil {
		for _, entry := range entries {
			target, err := filepath.EvalSymlinks(filepath.Join(uuids, entry.Name()))
			if err != nil {
				break // as the TypeScript SDK, which gives up the whole directory
			}
			number := attempt(func() (string, error) { return readText("/sys/class/block/" + filepath.Base(target) + "/dev") })
			if target == source || number == device {
				return entry.Name()
			}
		}
	}
	// A partition's serial lives on its parent disk, one directory up.
	for _, file := range []string{"serial", "device/serial", "../serial", "../device/serial", "device/wwid"} {
		if serial := attempt(func() (string, error) { return readText("/sys/dev/block/" + device + "/" + file) }); serial != "" {
			return serial
		}
	}
	return ""
}

// rootMount is the `major:minor` and source device of the filesystem mounted at / (the last wins).
func rootMount() (device, source string, ok bool) {
	text, err := readText("/proc/self/mountinfo")
	if err != nil {
		return "", "", false
	}
	for _, line := range strings.Split(text, "\n") {
		before, after, found := strings.Cut(line, " - ")
		fields := strings.Split(before, " ")
		if found && after != "" && len(fields) > 4 && fields[4] == "/" && fields[2] != "" {
			afterFields := strings.Split(after, " ")
			device, source, ok = fields[2], "", true
			if len(afterFields) > 1 {
				source = afterFields[1]
			}
		}
	}
	return device, source, ok
}

func hideWindow(*exec.Cmd) {}
