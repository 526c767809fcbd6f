"""The e1000e settings of p2pstore.cfg (declared in drivers/nic/e1000e_pci.c) reach the driver
before it binds: plain DRAM mode from the file, a bad value reported with its line and ignored;
the interface MTU (net.mtu, net/net_settings.c) reaches the driver as a jumbo MTU."""
import re

APPLIANCE_CONFIG = """panic = exit
nic.rx_mode = plain
net.mtu = 9000
nic.ps_units = 3
nic.tx_dev_max = 8192
"""


def test_settings_from_the_file_reach_the_driver(appliance):
    assert "p2pstore.cfg line 4: nic.ps_units '3' is not 1..2 (default kept)" in appliance.boot_text
    assert "unknown setting" not in appliance.boot_text
    out = appliance.cmd("nic")
    assert re.search(r"link up mtu 9000 ", out), out
    assert "rx mode: plain, frames -> DRAM" in out, out
    assert "rx ring: 256 x 16 B" in out and "RDH/RDT units 1" in out, "plain mode: 16-byte descriptors\n" + out
    assert "(tx_dev_max 8192)" in out, out


def test_selftest_with_jumbo_frames_then_back_to_the_configured_mode(appliance):
    out = appliance.cmd("nic selftest 4", timeout=60)
    assert "payload up to 8972 B" in out, out
    assert out.count("4/4 frames ok") == 3, out
    assert "rx mode: plain, frames -> DRAM" in appliance.cmd("nic"), "the configured mode is restored"
