//go:build !darwin && !windows

package licensor

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

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

// cpuModel is what Node's os.cpus()[0].model gives (libuv's uv_cpu_info): the model line of the
// first processor block of /proc/cpuinfo, at most 63 bytes, "unknown" when it has none. On arm64
// the "CPU part" code is named through libuv's table.
func cpuModel() string {
	model := "unknown"
	text, err := readText("/proc/cpuinfo")
	if err != nil {
		return model
	}
	markers := []string{"model name\t: "}
	switch runtime.GOARCH {
	case "arm":
		markers = []string{"model name\t: ", "Processor\t: "}
	case "arm64":
		markers = []string{"CPU part\t: "}
	case "ppc64", "ppc64le":
		markers = []string{"cpu\t\t: "}
	case "mips", "mipsle", "mips64", "mips64le":
		markers = []string{"cpu model\t\t: "}
	case "loong64":
		markers = []string{"cpu family\t\t: "}
	}
	firstBlock := strings.SplitN(text, "\n\n", 2)[0]
	if !strings.HasPrefix(firstBlock, "processor") {
		return model
	}
	for _, line := range strings.Split(firstBlock, "\n") {
		for _, marker := range markers {
			if strings.HasPrefix(line, marker) {
				model = strings.TrimPrefix(line, marker)
				if runtime.GOARCH == "arm64" {
					model = arm64PartName(model)
				}
				if len(model) > 63 {
					model = model[:63]
				}
				return strings.TrimSpace(model)
			}
		}
	}
	return model
}

// arm64PartName names an ARM "CPU part" code as libuv does, "unknown" for a code it does not know.
func arm64PartName(code string) string {
	names := map[string]string{
		"0x811": "ARM810", "0x920": "ARM920", "0x922": "ARM922", "0x926": "ARM926", "0x940": "ARM940",
		"0x946": "ARM946", "0x966": "ARM966", "0xa20": "ARM1020", "0xa22": "ARM1022", "0xa26": "ARM1026",
		"0xb02": "ARM11 MPCore", "0xb36": "ARM1136", "0xb56": "ARM1156", "0xb76": "ARM1176",
		"0xc05": "Cortex-A5", "0xc07": "Cortex-A7", "0xc08": "Cortex-A8", "0xc09": "Cortex-A9",
		"0xc0d": "Cortex-A17", "0xc0f": "Cortex-A15", "0xc0e": "Cortex-A17", "0xc14": "Cortex-R4",
		"0xc15": "Cortex-R5", "0xc17": "Cortex-R7", "0xc18": "Cortex-R8", "0xc20": "Cortex-M0",
		"0xc21": "Cortex-M1", "0xc23": "Cortex-M3", "0xc24": "Cortex-M4", "0xc27": "Cortex-M7",
		"0xc60": "Cortex-M0+", "0xd01": "Cortex-A32", "0xd03": "Cortex-A53", "0xd04": "Cortex-A35",
		"0xd05": "Cortex-A55", "0xd06": "Cortex-A65", "0xd07": "Cortex-A57", "0xd08": "Cortex-A72",
		"0xd09": "Cortex-A73", "0xd0a": "Cortex-A75", "0xd0b": "Cortex-A76", "0xd0c": "Neoverse-N1",
		"0xd0d": "Cortex-A77", "0xd0e": "Cortex-A76AE", "0xd13": "Cortex-R52", "0xd20": "Cortex-M23",
		"0xd21": "Cortex-M33", "0xd41": "Cortex-A78", "0xd42": "Cortex-A78AE", "0xd4a": "Neoverse-E1",
		"0xd4b": "Cortex-A78C",
	}
	if name, ok := names[code]; ok {
		return name
	}
	return "unknown"
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
