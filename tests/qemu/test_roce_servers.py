"""rxe0's interop servers (rping, ibv_rc_pingpong, perftest) follow the configuration key
rdma.interop_servers: booted with it off, none listens (no rdma_cm listener, `rdma` says so); turned
on at run time with `config`, the rping and perftest rdma_cm listeners appear (ports 7174 and 18515)
and the log says the servers started; off again, they are gone."""
import pytest

from harness import Appliance


@pytest.fixture(scope="module")
def app():
    a = Appliance("test_roce_servers", "panic = exit\nrdma.interop_servers = off\n")
    try:
        a.boot()
        yield a
    finally:
        a.close()


def test_off_from_the_configuration(app):
    out = app.cmd("rdma")
    assert "interop servers: off (rdma.interop_servers)" in out, out
    assert "listen service id 0x1061c06" not in out and "listen service id 0x1064853" not in out, out


def test_on_and_off_at_run_time(app):
    app.cmd("config rdma.interop_servers on")
    out = app.cmd("rdma")
    assert "interop servers: off" not in out, out
    assert "listen service id 0x1061c06" in out, out      # rping, rdma_cm port 7174
    assert "listen service id 0x1064853" in out, out      # perftest, rdma_cm port 18515
    app.cmd("config rdma.interop_servers off")
    out = app.cmd("rdma")
    assert "interop servers: off" in out, out
    assert "listen service id 0x1061c06" not in out, out
