"""Admin and monitoring commands, memcached's HTTP close and its unlink of a refused set, over raw
sockets; every expectation here is what memcached 1.6.18 answers (run this file against it with
PMCACHED_SERVER="/usr/bin/memcached -U 0" to see). Kept lean: it runs once per engine.
"""

import os
import re
import shlex
import time

PAGED = ("bptree", "b2tree")


def engine_of(server_command):
    argv = shlex.split(server_command)
    return argv[argv.index("--engine") + 1] if "--engine" in argv else None


# --- a request line that looks like HTTP ------------------------------------------------------

def test_http_request_line_closes_without_a_reply(server, connect):
    c = connect(server)
    # Sent at once: memcached drops the VERSION it has not sent yet and closes.
    c.send(b"version\r\nGET / HTTP/1.0\r\nversion\r\n")
    assert c.closed_by_peer()
    c = connect(server)
    c.send(b"HEAD /index.html HTTP/1.1\r\n")
    assert c.closed_by_peer()


def test_http_check_applies_only_to_unknown_words_of_other_initials(server, connect):
    c = connect(server)
    # An unknown word starting like a frequent command (s, g, ...) is a plain ERROR.
    assert c.request(b"sXY / HTTP/1.0\r\n") == b"ERROR\r\n"
    assert c.request(b"foo HTTP/ x\r\n") == b"ERROR\r\n"  # not the last token
    assert c.request(b"bar http/1.0\r\n") == b"ERROR\r\n"  # case matters


# --- a set refused for lack of memory drops the old value -----------------------------------

def fill_until_out_of_memory(c, value, limit=400):
    for i in range(limit):
        reply = c.request(b"set fill%d 0 0 %d\r\n%s\r\n" % (i, len(value), value))
        if reply == b"SERVER_ERROR out of memory storing object\r\n":
            return i
        assert reply == b"STORED\r\n"
    raise AssertionError("memory never ran out")


def test_set_refused_for_lack_of_memory_removes_the_old_value(server_factory, server_command,
                                                              connect):
    if engine_of(server_command) in PAGED:  # their limit is the page file
        server = server_factory("--page-file-mb", "4").address
    else:
        server = server_factory("-M", "-m", "8").address
    c = connect(server)
    assert c.request(b"set victim 0 0 3\r\nold\r\nms mvictim 3\r\nold\r\n") == b"STORED\r\nHD\r\n"
    value = b"v" * (256 * 1024)
    fill_until_out_of_memory(c, value)
    # Both refused; neither key may still be read with its old value.
    assert c.request(b"set victim 0 0 %d\r\n%s\r\n" % (len(value), value)) == \
        b"SERVER_ERROR out of memory storing object\r\n"
    assert c.request(b"ms mvictim %d\r\n%s\r\n" % (len(value), value)) == \
        b"SERVER_ERROR out of memory storing object\r\n"
    assert c.request(b"get victim mvictim\r\n") == b"END\r\n"
    stats = c.request(b"stats\r\n")
    assert re.search(rb"STAT store_no_memory [1-9]", stats), stats


def test_store_too_large_is_counted(server, connect):
    c = connect(server)
    big = b"x" * (2 << 20)
    assert c.request(b"set big 0 0 %d\r\n%s\r\n" % (len(big), big)) == \
        b"SERVER_ERROR object too large for cache\r\n"
    stats = c.request(b"stats\r\n")
    assert b"STAT store_too_large 1\r\n" in stats
    assert b"STAT store_no_memory 0\r\n" in stats
    assert re.search(rb"STAT connection_structures \d+\r\nSTAT [a-z_]+ \d+", stats)
    assert re.search(rb"STAT reserved_fds \d+\r\n", stats)


# --- stats groups ---------------------------------------------------------------------------

def test_stats_sizes_and_detail(server, connect):
    c = connect(server)
    assert c.request(b"stats sizes\r\n") == b"STAT sizes_status disabled\r\nEND\r\n"
    assert c.request(b"stats detail\r\n") == b"CLIENT_ERROR usage: stats detail on|off|dump\r\n"
    assert c.request(b"stats detail dump\r\n") == b"END\r\n"
    assert c.request(b"stats detail on\r\n") == b"OK\r\n"
    c.request(b"set a:1 0 0 1\r\nx\r\nget a:1 b:2 plain\r\ndelete a:1\r\nmg a:9 v\r\n")
    # Meta commands and keys without ':' are not counted; memcached lists in hash order.
    dump = c.request(b"stats detail dump\r\n")
    assert dump.endswith(b"END\r\n")
    assert sorted(dump.splitlines()[:-1]) == [b"PREFIX a get 1 hit 1 set 1 del 1",
                                              b"PREFIX b get 1 hit 0 set 0 del 0"]
    assert c.request(b"stats detail off\r\n") == b"OK\r\n"
    c.request(b"get a:1\r\n")
    assert c.request(b"stats reset\r\nstats detail dump\r\n") == b"RESET\r\nEND\r\n"


def test_stats_cachedump(server_command, server, connect):
    c = connect(server)
    assert c.request(b"stats cachedump 1 0\r\n") == b"END\r\n"
    c.request(b"set k1 0 0 3\r\nabc\r\nset k2 0 0 1\r\nx\r\n")
    # memcached lists only the items in its hot LRU segment; pmcached has no segments.
    if "pmcached" in server_command:
        assert c.request(b"stats cachedump 1 0\r\n") == \
            b"ITEM k1 [3 b; 0 s]\r\nITEM k2 [1 b; 0 s]\r\nEND\r\n"
        assert c.request(b"stats cachedump 1 1\r\n") == b"ITEM k1 [3 b; 0 s]\r\nEND\r\n"
    assert c.request(b"stats cachedump 2 0\r\n") == b"END\r\n"
    assert c.request(b"stats cachedump 1\r\n") == b"CLIENT_ERROR bad command line\r\n"
    assert c.request(b"stats cachedump x 1\r\n") == b"CLIENT_ERROR bad command line format\r\n"
    assert c.request(b"stats cachedump 64 1\r\n") == b"CLIENT_ERROR Illegal slab id\r\n"


def test_stats_conns_lists_this_connection(server, connect):
    c = connect(server)
    reply = c.request(b"stats conns\r\n").decode()
    local = "tcp:127.0.0.1:%d" % c.sock.getsockname()[1]
    fd = re.search(r"STAT (\d+):addr " + re.escape(local) + "\r\n", reply)
    assert fd, reply
    assert f"STAT {fd[1]}:listen_addr tcp:127.0.0.1:{server[1]}\r\n" in reply
    assert f"STAT {fd[1]}:state conn_parse_cmd\r\n" in reply
    assert re.search(r"STAT \d+:state conn_listening\r\n", reply)
    assert reply.endswith("END\r\n")


# --- lru_crawler, slabs, cache_memlimit, watch ----------------------------------------------

def test_lru_crawler_metadump_lists_keys_url_encoded(server, connect):
    c = connect(server)
    c.request(b"set foo:1 5 0 3\r\nabc\r\nset t%20 0 100 1\r\nx\r\n")
    c.send(b"lru_crawler metadump all\r\n")
    dump = c.read_until(b"END\r\n").decode()
    lines = sorted(dump[:-len("END\r\n")].splitlines())
    assert len(lines) == 2, dump
    assert re.fullmatch(r"key=foo%3A1 exp=-1 la=\d+ cas=\d+ fetch=no cls=1 size=71", lines[0])
    assert re.fullmatch(r"key=t%2520 exp=\d+ la=\d+ cas=\d+ fetch=no cls=1 size=64", lines[1])
    c.send(b"lru_crawler metadump 99\r\n")
    assert c.read_line() == b"BADCLASS invalid class id\r\n"
    assert c.request(b"version\r\nlru_crawler metadump all\r\n").endswith(
        b"ERROR cannot pipeline other commands before metadump\r\n")


def test_lru_crawler_metadump_names_and_selects_size_classes(server, connect):
    # memcached's classes with -n 48 -f 1.25: 562 bytes (48 + 8 + 3 + 1 + 500 + 2) is class 9
    # (600-byte chunks); a 3-byte value is class 1 (96). A paged engine keeps items on its pages,
    # has no size classes (`stats slabs` lists none) and reports every item in class 1 (README).
    c = connect(server)
    c.request(b"set big 0 0 500\r\n" + b"v" * 500 + b"\r\nset small 0 0 3\r\nabc\r\n")
    has_classes = b"STAT 9:chunk_size 600\r\n" in c.request(b"stats slabs\r\n")
    big_class = 9 if has_classes else 1
    c.send(b"lru_crawler metadump %d\r\n" % big_class)
    dump = c.read_until(b"END\r\n").decode()
    assert re.search(r"^key=big exp=-1 la=\d+ cas=\d+ fetch=no cls=%d size=562$" % big_class,
                     dump, re.M), dump
    assert ("key=small " in dump) == (big_class == 1), dump
    if has_classes:
        c.send(b"lru_crawler metadump 1,2\r\n")
        dump = c.read_until(b"END\r\n").decode()
        assert re.fullmatch(r"key=small exp=-1 la=\d+ cas=\d+ fetch=no cls=1 size=\d+\nEND\r\n",
                            dump), dump


def test_lru_crawler_settings(server, connect):
    c = connect(server)
    assert c.request(b"lru_crawler crawl 0\r\nlru_crawler crawl 64\r\nlru_crawler crawl x\r\n"
                     b"lru_crawler crawl 1,2\r\n") == b"BADCLASS invalid class id\r\n" * 3 + b"OK\r\n"
    assert c.request(b"lru_crawler tocrawl 10\r\nlru_crawler sleep 2000000\r\n"
                     b"lru_crawler sleep x\r\nlru_crawler bogus\r\nlru_crawler\r\n") == \
        b"OK\r\nCLIENT_ERROR sleep must be one second or less\r\n" \
        b"CLIENT_ERROR bad command line format\r\nERROR\r\nERROR\r\n"
    assert c.request(b"lru_crawler disable\r\nlru_crawler crawl all\r\n") == \
        b"OK\r\nCLIENT_ERROR lru crawler disabled\r\n"
    # memcached 1.6.18 cannot restart its crawler thread ("ERROR failed to start lru crawler
    # thread"); pmcached's sweep restarts (OK).
    assert c.request(b"lru_crawler enable\r\n") in (
        b"OK\r\n", b"ERROR failed to start lru crawler thread\r\n")


def crawler_items_checked(c):
    return int(re.search(rb"STAT crawler_items_checked (\d+)\r\n", c.request(b"stats\r\n")).group(1))


def test_lru_crawler_crawl_counts_the_items_it_checks(server, connect):
    c = connect(server)
    for i in range(3):
        assert c.request(b"set crawled%d 0 0 1\r\nx\r\n" % i) == b"STORED\r\n"
    before = crawler_items_checked(c)
    assert c.request(b"lru_crawler crawl all\r\n") == b"OK\r\n"
    # The crawl runs in the background (memcached: its crawler thread; pmcached: the sweep).
    deadline = time.monotonic() + 10
    while crawler_items_checked(c) < before + 3:
        assert time.monotonic() < deadline, "the crawl did not check the three items"
        time.sleep(0.01)


def test_slabs_commands(server, connect):
    c = connect(server)
    assert c.request(b"slabs reassign 1 1\r\nslabs reassign 1 2\r\nslabs reassign 1 99\r\n"
                     b"slabs reassign x 1\r\n") == \
        b"SAME src and dst class are identical\r\nNOSPARE source class has no spare pages\r\n" \
        b"BADCLASS invalid src or dst class id\r\nCLIENT_ERROR bad command line format\r\n"
    assert c.request(b"slabs automove 2\r\nslabs automove 3\r\nslabs automove x\r\n"
                     b"slabs automove ratio 0.5 x\r\nslabs automove 1 noreply\r\nslabs\r\n") == \
        b"OK\r\nERROR\r\nCLIENT_ERROR bad command line format\r\nOK\r\nERROR\r\n"


def test_cache_memlimit(server_command, server, connect):
    c = connect(server)
    assert c.request(b"cache_memlimit 7\r\ncache_memlimit 2000000000\r\ncache_memlimit x\r\n"
                     b"cache_memlimit\r\n") == \
        b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n" \
        b"MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\nERROR\r\nERROR\r\n"
    volatile = "pmcached" not in server_command or engine_of(server_command) == "dram"
    reply = c.request(b"cache_memlimit 100\r\n")
    if volatile:
        assert reply == b"OK\r\n"
        stats = c.request(b"stats\r\nstats settings\r\n")
        assert b"STAT limit_maxbytes 104857600\r\n" in stats
        assert b"STAT maxbytes 104857600\r\n" in stats
    else:  # a persistent pool keeps the size it was created with
        assert reply == b"MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n"


def test_watch_fetchers_and_mutations(server, connect):
    watcher = connect(server)
    assert watcher.request(b"version\r\nwatch\r\n").endswith(
        b"ERROR cannot pipeline other commands before watch\r\n")
    assert watcher.request(b"watch bogus\r\n") == b"ERROR\r\n"
    watcher.send(b"watch fetchers mutations evictions\r\n")
    assert watcher.read_line() == b"OK\r\n"
    c = connect(server)
    c.request(b"get w:1\r\nset w:1 0 100 2\r\nab\r\nadd w:1 0 0 1\r\nx\r\n")
    # memcached also logs the lookups its storage commands make; pmcached logs the commands only,
    # so read up to the last event and look for the ones both log.
    lines = []
    while not lines or "cmd=add" not in lines[-1]:
        lines.append(watcher.read_line().decode())
    events = [re.sub(r"^ts=\d+\.\d+ gid=\d+ ", "", line) for line in lines]
    assert all(re.match(r"ts=\d+\.\d+ gid=\d+ type=", line) for line in lines), lines
    fd = re.search(r"cfd=(\d+)", events[0])[1]
    assert events[0] == f"type=item_get key=w%3A1 status=not_found clsid=0 cfd={fd} size=0\n"
    assert f"type=item_store key=w%3A1 status=stored cmd=set ttl=100 clsid=1 cfd={fd} size=2\n" \
        in events, events
    assert events[-1] == \
        f"type=item_store key=w%3A1 status=not_stored cmd=add ttl=0 clsid=1 cfd={fd} size=1\n"
