"""The disk image (`make disk`, tools/p2pstore-image): a GPT disk with the ESP boots in QEMU as
a disk (the AHCI drive is the image, not a FAT directory), the appliance reads the p2pstore.cfg
that `p2pstore-image put` placed in it without mounting, and the image's own files read back."""
import os
import subprocess

from harness import EFI_NAME, Appliance, BUILD, TOP

TOOL = os.path.join(TOP, "tools", "p2pstore-image")


def test_disk_image_boots_with_a_config_put_into_it():
    img = os.path.join(BUILD, "test-disk.img")
    efi = os.path.join(BUILD, "esp", "EFI", "BOOT", EFI_NAME)
    out = subprocess.run([TOOL, "create", img, "--efi", efi, "--boot-name", EFI_NAME], check=True, capture_output=True, text=True).stdout
    assert "66 MiB GPT disk, ESP 64 MiB FAT32 at LBA 2048" in out, out
    template = subprocess.run([TOOL, "get", img, "p2pstore.cfg"], check=True, capture_output=True, text=True).stdout
    assert "# net.address = dhcp" in template, template
    cfg = os.path.join(BUILD, "test-disk.cfg")
    with open(cfg, "w") as f:
        f.write("panic = exit\nnet.address = 10.0.2.15\nnet.gateway = 10.0.2.2\n")
    subprocess.run([TOOL, "put", img, cfg, "p2pstore.cfg"], check=True, capture_output=True)
    bad = subprocess.run([TOOL, "put", img, cfg, "other.cfg"], capture_output=True, text=True)
    assert bad.returncode == 1 and "the appliance reads p2pstore.cfg, nvmet.json" in bad.stderr, bad.stderr
    size = os.path.getsize(img)
    app = Appliance("test_disk", config=None, disk=img)
    try:
        app.boot()
        assert "config: 3 settings from p2pstore.cfg, 0 errors" in app.boot_text, app.boot_text[-2000:]
        out = app.cmd("ip -q")
        assert "address 10.0.2.15 netmask 255.255.255.0 gateway 10.0.2.2" in out, out
        out = app.cmd("bootinfo")
        assert "p2pstore.cfg" in out, out
        print(f"disk image {size} B, boot to prompt {app.boot_seconds:.1f} s")
    finally:
        app.close()
    # snapshot=on: the image is unchanged by the boot
    assert os.path.getsize(img) == size
