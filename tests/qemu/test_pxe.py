"""Network boot (README, "On real hardware"): with no disk at all, the NIC's UEFI option ROM (iPXE's
for the e1000e, tools/qemu-run --pxe) gets a DHCP lease naming EFI/BOOT/BOOTX64.EFI as the boot file
and loads it by TFTP from QEMU's user network; the image has no ESP volume to read \\p2pstore\\ from, runs on the defaults, leases
its address by DHCP and serves the default target. x86_64 only (the ROM is an x64 driver)."""
import os
import shutil

import pytest

from harness import ARCH, Appliance, BUILD, EFI_NAME
from test_dhcp import log_wait


@pytest.mark.skipif(ARCH != "x86_64", reason="iPXE's e1000e UEFI ROM is an x64 driver")
def test_pxe_boot_runs_on_the_defaults_and_serves():
    tftp = os.path.join(BUILD, "test-pxe")
    shutil.rmtree(tftp, ignore_errors=True)
    os.makedirs(os.path.join(tftp, "EFI", "BOOT"))
    shutil.copy(os.path.join(BUILD, "esp", "EFI", "BOOT", EFI_NAME), os.path.join(tftp, "EFI", "BOOT", EFI_NAME))
    # a settings file next to the image on the TFTP server is not the image's ESP: never read
    os.makedirs(os.path.join(tftp, "p2pstore"))
    with open(os.path.join(tftp, "p2pstore", "p2pstore.cfg"), "w") as f:
        f.write("net.address = 10.0.2.99\n")
    app = Appliance("test_pxe", config=None, run_args=["--pxe", tftp])
    try:
        text = app.boot()
        assert "tftp://10.0.2.2/EFI/BOOT/BOOTX64.EFI... ok" in text, text[-3000:]
        assert "config:" not in text, "no settings file on a network boot"
        log_wait(app, r"dhcp: bound to 10\.0\.2\.15/255\.255\.255\.0 router 10\.0\.2\.2", timeout=30)
        log_wait(app, r"nvmet:   nvme connect -t tcp -a 10\.0\.2\.15 -s 4420 -n nqn\.2026-11\.org\.p2pstore:default-",
                 timeout=30)
        out = app.cmd("bootinfo")
        assert "config file:" not in out, out
        out = app.cmd("nvmet")
        assert "port 1: tcp 10.0.2.15:4420, 1 subsystems" in out, out
        print(f"PXE boot to prompt {app.boot_seconds:.1f} s")
    finally:
        app.close()
