"""The NVMe-oF target from an nvmetcli configuration on the ESP (\\p2pstore\\nvmet.json):
a Linux `nvmetcli save` file starts the target over the local drives (what the appliance
does not use is a warning), and a broken file is reported with its JSON path while the
appliance still reaches its console, without a target."""
import os

from harness import Appliance

HERE = os.path.dirname(os.path.abspath(__file__))
NVMETCLI = os.path.join(HERE, "..", "fuzz", "corpus", "nvmet_config", "seed-nvmetcli")


def boot(name, text):
    # the file's port is on 10.10.0.10: a static address, not DHCP's
    app = Appliance(name, config="panic = exit\nnet.address = 10.10.0.10\n", files={"nvmet.json": text})
    app.boot()
    return app


def test_nvmetcli_file_starts_the_target_over_the_local_drives():
    with open(NVMETCLI) as f:
        text = f.read()
    app = boot("test_nvmet", text)
    try:
        assert "nvmet: target started from nvmet.json: 1 ports, 1 subsystems" in app.boot_text
        assert "ana_groups" not in app.boot_text  # nvmetcli's ANA groups are used now, not ignored
        out = app.cmd("nvmet")
        assert "port 1: tcp 10.10.0.10:4420, 1 subsystems" in out, out
        assert 'subsystem nqn.2026-11.org.p2pstore:vol0: sn "9a6fa5b3f25ba0e8" mn "Linux" cntlid 1..65519' in out, out
        assert "hosts: nqn.2014-08.org.nvmexpress:uuid:0c5f2ae1-0000-4000-8000-000000000001" in out, out
        # /dev/nvme1n1 in the file: the second local drive, 64 MiB of 512 B blocks
        assert "ns 1: nvme1n1 enabled, 131072 blocks of 512 B" in out, out
        assert "0 controllers, 0 queues" in out, out
        out = app.cmd("ana")
        assert "group 1: optimized, namespaces: nqn.2026-11.org.p2pstore:vol0/1" in out, out
    finally:
        app.close()


def test_broken_file_is_reported_and_the_appliance_runs_without_a_target():
    with open(NVMETCLI) as f:
        text = f.read().replace('"trsvcid": "4420"', '"trsvcid": "99999"')
    app = boot("test_nvmet_bad", text)
    try:
        assert "ports[0].addr.trsvcid: 99999 is outside 1..65535" in app.boot_text, app.boot_text[-2000:]
        assert "target started" not in app.boot_text
        out = app.cmd("nvmet")
        assert "port " not in out and "subsystem " not in out, out
        assert "up " in app.cmd("uptime")
    finally:
        app.close()
