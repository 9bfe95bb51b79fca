package licensor

import (
	"net"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"unsafe"
)

// Windows: the sources of packages/sdk/src/fingerprint.ts there.

var volumeSerialPattern = regexp.MustCompile(`(?im)([0-9A-F]{4}-[0-9A-F]{4})\s*$`)

// machineID is MachineGuid under HKLM\SOFTWARE\Microsoft\Cryptography.
func machineID() string {
	return registryString(`SOFTWARE\Microsoft\Cryptography`, "MachineGuid")
}

// defaultRouteInterface: Windows takes the first usable interface by name (adapter friendly names).
func defaultRouteInterface() string { return "" }

// interfaceRunning: net.FlagUp on Windows already means an operational status of up, which is
// all Node asks of an adapter there.
func interfaceRunning(net.Interface) bool { return true }

// cpuModel is ProcessorNameString of the first processor, which Node's os.cpus() reports.
func cpuModel() string {
	return registryString(`HARDWARE\DESCRIPTION\System\CentralProcessor\0`, "ProcessorNameString")
}

// systemDiskID is the system drive's volume serial number as `vol` prints it.
func systemDiskID() string {
	drive := os.Getenv("SystemDrive")
	if drive == "" {
		drive = "C:"
	}
	return capture(volumeSerialPattern, "cmd", "/d", "/c", "vol "+drive)
}

func hideWindow(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{HideWindow: true}
}

// registryString reads a REG_SZ value under HKEY_LOCAL_MACHINE, "" when it cannot.
func registryString(path, name string) string {
	pathUTF16, err := syscall.UTF16PtrFromString(path)
	if err != nil {
		return ""
	}
	nameUTF16, err := syscall.UTF16PtrFromString(name)
	if err != nil {
		return ""
	}
	var key syscall.Handle
	if syscall.RegOpenKeyEx(syscall.HKEY_LOCAL_MACHINE, pathUTF16, 0, syscall.KEY_READ|syscall.KEY_WOW64_64KEY, &key) != nil {
		return ""
	}
	defer syscall.RegCloseKey(key)
	var kind, size uint32
	if syscall.RegQueryValueEx(key, nameUTF16, nil, &kind, nil, &size) != nil || kind != syscall.REG_SZ || size < 2 {
		return ""
	}
	buffer := make([]uint16, size/2)
	if syscall.RegQueryValueEx(key, nameUTF16, nil, &kind, (*byte)(unsafe.Pointer(&buffer[0])), &size) != nil {
		return ""
	}
	return attempt(func() (string, error) { return syscall.UTF16ToString(buffer), nil })
}
