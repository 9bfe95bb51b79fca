package licensor

import (
	"net"
	"os/exec"
	"regexp"
	"syscall"
)

// macOS: the sources of packages/sdk/src/fingerprint.ts there.

var (
	platformUUIDPattern = regexp.MustCompile(`"IOPlatformUUID"\s*=\s*"([^"]+)"`)
	volumeUUIDPattern   = regexp.MustCompile(`Volume UUID:\s*(\S+)`)
)

func machineID() string {
	return capture(platformUUIDPattern, "ioreg", "-rd1", "-c", "IOPlatformExpertDevice")
}

// defaultRouteInterface: macOS takes the first usable interface by name.
func defaultRouteInterface() string { return "" }

// interfaceRunning is IFF_RUNNING from the routing socket's interface list, as getifaddrs
// reports it (Go 1.19 has no net.FlagRunning).
func interfaceRunning(iface net.Interface) bool {
	rib, err := syscall.RouteRIB(syscall.NET_RT_IFLIST, iface.Index)
	if err != nil {
		return false
	}
	messages, err := syscall.ParseRoutingMessage(rib)
	if err != nil {
		return false
	}
	for _, message := range messages {
		if m, ok := message.(*syscall.InterfaceMessage); ok && int(m.Header.Index) == iface.Index {
			return m.Header.Flags&syscall.IFF_RUNNING != 0
		}
	}
	return false
}

// cpuModel is machdep.cpu.brand_string, which Node's os.cpus() reports on macOS.
func cpuModel() string {
	return attempt(func() (string, error) { return syscall.Sysctl("machdep.cpu.brand_string") })
}

func systemDiskID() string {
	return capture(volumeUUIDPattern, "diskutil", "info", "/")
}

func hideWindow(*exec.Cmd) {}
