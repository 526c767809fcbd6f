"""Boot the appliance once and exercise the console: boot time, help from several files,
mem, uptime, log levels, stats, line editing and history, page tables, PAT read back,
config errors, and a clean poweroff that exits QEMU with status 0."""
import re
import time

from harness import ARCH

# What differs between the architectures' consoles.
if ARCH == "arm64":
    CLOCK_REFERENCE = "CNTFRQ_EL0"
    MEMATTR = r"mair: 0x000444ff[0-9a-f]{8} "     # Attr4 WB, Attr5 NC, Attr6 Device-nGnRE
    COUNTER = r"counter: \d{7,} Hz"
    DEVICE_PAGE = "0x8000000"                   # the GIC distributor (virt)
    RAM_PAGE = "0x41000000"
    IDLE_MODE = r"GICv3 virtual-timer WFI"
else:
    CLOCK_REFERENCE = "ACPI PM timer"
    MEMATTR = r"pat: 0x0007040600070106"
    COUNTER = r"tsc: \d{8,} Hz"
    DEVICE_PAGE = "0xfee00000"                  # the local APIC
    RAM_PAGE = "0x1000000"
    IDLE_MODE = r"LAPIC [\w-]+"

APPLIANCE_CONFIG = """# test configuration
panic = exit
log.loop = debug
this line is wrong
no.such.setting = 1
"""


def test_boot_time_under_one_second(appliance):
    m = re.search(r"boot: efi_main to prompt in (\d+)\.(\d+) ms", appliance.boot_text)
    assert m, appliance.boot_text
    ms = int(m.group(1))
    assert ms < 1000, f"boot took {ms} ms"
    print(f"boot: efi_main to prompt {m.group(1)}.{m.group(2)} ms; QEMU start to prompt {appliance.boot_seconds:.1f} s")


def test_bad_config_is_reported_and_boot_goes_on(appliance):
    text = appliance.boot_text
    assert "p2pstore.cfg line 4: expected 'key = value'" in text
    assert "line 5: unknown setting 'no.such.setting'" in text
    assert "config: 3 settings from p2pstore.cfg, 2 errors" in text
    out = appliance.cmd("log")
    assert re.search(r"^\s+loop\s+debug$", out, re.M), "log.loop = debug was applied:\n" + out


def test_config_lists_origins_and_sets_run_time_keys(appliance):
    out = appliance.cmd("config")
    assert re.search(r"^panic\s+= exit\s+\(file line 2; default halt; halt\|exit\|reboot\)$", out, re.M), out
    assert re.search(r"^log\.\*\s+= loop=debug\s+\(file line 3;", out, re.M), out
    assert re.search(r"^nic\.tso\s+= auto\s+\(default; default auto; auto\|on\|off\)$", out, re.M), out
    n = int(re.search(r"^(\d+) settings;", out, re.M).group(1))
    assert n == len(re.findall(r"^\S+\s+= ", out, re.M)) and n >= 20, out
    out = appliance.cmd("config loop.halt_us 500")
    assert re.search(r"^loop\.halt_us\s+= 500\s+\(console; default \d+; 0\.\.1000000; run time\)$", out, re.M), out
    assert "read at boot only" in appliance.cmd("config nic.tso on")
    assert "is not 0..1000000" in appliance.cmd("config loop.halt_us -1")
    assert re.search(r"^loop\.halt_us\s+= 500 ", appliance.cmd("config loop"), re.M)
    appliance.cmd("config loop.halt_us " + re.search(r"default (\d+);", out).group(1))


def test_help_lists_commands_registered_by_several_files(appliance):
    out = appliance.cmd("help -v")
    # a row: "  name usage   help   [file]"; a long usage puts help and file on the next line
    rows = re.findall(r"^  (\S+)\s(?:[^\n]*\n {20,})?[^\n]*\[([\w/.]+)\]$", out, re.M)
    commands = {name: src for name, src in rows}
    for required in ("help", "mem", "uptime", "log", "stats", "poweroff", "fault", "cpu", "vm"):
        assert required in commands, f"{required} missing from:\n{out}"
    files = set(commands.values())
    assert len(files) >= 3, files
    assert {"core/core_commands.c", "mm/mm_command.c", "arch/fault_command.c"} <= files
    assert re.search(r"^(\d+) commands", out, re.M).group(1) == str(len(rows))
    one = appliance.cmd("help fault")
    assert "raise a CPU exception on purpose" in one and "arch/fault_command.c" in one


def test_mem_reports_allocator_heap_and_pools(appliance):
    out = appliance.cmd("mem")
    m = re.search(r"pages: total (\d+) \((\d+) MiB\) free (\d+)", out)
    assert m, out
    total, mib, free = int(m.group(1)), int(m.group(2)), int(m.group(3))
    assert 700 <= mib <= 1024, f"1 GiB guest, got {mib} MiB"
    assert 0 < free < total
    assert "bad-frees 0" in out
    heap = re.search(r"heap: arena (\d+) KiB, break (\d+) KiB", out)
    assert heap and int(heap.group(1)) == 64 * 1024 and int(heap.group(2)) <= int(heap.group(1)), out


def test_uptime_advances_and_matches_the_tsc(appliance):
    a = re.search(r"up (\d+)\.(\d+) s", appliance.cmd("uptime"))
    b_out = appliance.cmd("uptime")
    b = re.search(r"up (\d+)\.(\d+) s", b_out)
    assert a and b
    assert (int(b.group(1)), int(b.group(2))) > (int(a.group(1)), int(a.group(2)))
    assert CLOCK_REFERENCE in b_out


def test_log_levels_can_be_set_and_errors_are_clear(appliance):
    assert appliance.cmd("log kernel debug") == ""
    assert re.search(r"^\s+kernel\s+debug$", appliance.cmd("log"), re.M)
    assert "no module 'nosuch'" in appliance.cmd("log nosuch info")
    assert "level must be err, warn, info or debug" in appliance.cmd("log kernel loud")
    replay = appliance.cmd("log show")
    assert "boot: efi_main to prompt" in replay


def test_stats_sections_and_console_poller(appliance):
    out = appliance.cmd("stats")
    assert "loop:" in out and "dma:" in out
    m = re.search(r"poller console\s+calls (\d+) busy (\d+)", out)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, out
    assert "host-dram" in out
    assert appliance.cmd("stats dma").startswith("dma:")


def test_unknown_command_and_bad_quoting(appliance):
    assert "frobnicate: unknown command (type 'help' for the list)" in appliance.cmd("frobnicate now")
    assert "unterminated quote" in appliance.cmd('log "kernel')
    assert "usage: vm ADDRESS" in appliance.cmd("vm")


def test_line_editing_and_history_over_serial(appliance):
    # type "uptiXme", go left twice, delete the X with Backspace, run it; the editor
    # redraws the prompt while editing, so wait for the command's output, then the prompt
    appliance.send("uptiXme\x1b[D\x1b[D\x7f\r")
    out, _ = appliance.wait_for(r"up \d+\.\d+ s[^\n]*\n")
    assert "unknown command" not in out, out
    appliance.wait_for(r"p2pstore> ")
    # Ctrl-U wipes a draft; Up recalls "uptime"
    appliance.send("garbage\x15\x1b[A\r")
    out, _ = appliance.wait_for(r"up \d+\.\d+ s[^\n]*\n")
    assert "unknown command" not in out, out
    appliance.wait_for(r"p2pstore> ")
    assert "uptime" in appliance.cmd("help uptime")


def test_pat_read_back(appliance):
    out = appliance.cmd("cpu")
    assert re.search(MEMATTR, out), out
    assert re.search(COUNTER, out), out


def test_page_tables_map_what_they_should(appliance):
    assert "not mapped" in appliance.cmd("vm 0"), "page 0 must fault"
    assert "not mapped" in appliance.cmd("vm 0x800000000000"), "beyond the identity map"
    device = appliance.cmd("vm " + DEVICE_PAGE)
    assert "uncached" in device, device
    ram = appliance.cmd("vm " + RAM_PAGE)
    assert "write-back" in ram and "phys " + RAM_PAGE in ram, ram


def test_bootinfo_reports_the_handoff(appliance):
    out = appliance.cmd("bootinfo")
    assert "firmware: EDK II" in out
    assert "config file: p2pstore.cfg" in out
    attempts = int(re.search(r"ExitBootServices attempts (\d+)", out).group(1))
    assert 1 <= attempts <= 8
    assert re.search(r"memory map: \d+ ranges; free \d+ KiB", out)


def test_idle_appliance_halts_instead_of_spinning(appliance):
    # The host's own accounting is the oracle: an idle appliance must leave its core.
    cpu0, t0 = appliance.qemu_cpu_seconds(), time.monotonic()
    time.sleep(4)
    cpu1, t1 = appliance.qemu_cpu_seconds(), time.monotonic()
    share = (cpu1 - cpu0) / (t1 - t0)
    out = appliance.cmd("stats loop")
    m = re.search(r"idle halts (\d+) \((" + IDLE_MODE + r")\), halted (\d+) ms = (\d+)% of uptime", out)
    assert m, out
    # halts of 1 ms while a device is polled (arm64), of up to loop.sleep_ms while every
    # device wakes the CPU by interrupt (x86_64): tens to thousands in the uptime so far
    assert int(m.group(1)) > 10, out
    assert int(m.group(4)) >= 50, out
    print(f"idle: QEMU used {share:.0%} of a host core; {m.group(1)} halts via {m.group(2)}, {m.group(4)}% of uptime halted")
    assert share < 0.5, f"idle QEMU used {share:.0%} of a core"


def test_poweroff_exits_qemu_with_success(appliance):
    appliance.send("poweroff\r")
    appliance.wait_for("powering off")
    assert appliance.exit_status(timeout=60) == 0
