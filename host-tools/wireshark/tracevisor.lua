-- SPDX-License-Identifier: MIT
--
-- tracevisor.lua - Wireshark/tshark dissector for the tracevisor export
-- protocol (docs/PROTOCOL.md, net/proto.h): HELLO, HELLO_ACK, DATA, PT,
-- ACK/NACK, HEARTBEAT, LOSS, CONTROL, CONTROL_REPLY.
--
-- Use:
--   tshark -X lua_script:host-tools/wireshark/tracevisor.lua -r capture.pcap
--   tshark -X lua_script:... -r f.pcap -T fields -e tracevisor.type -e tracevisor.session
-- or copy it to ~/.local/lib/wireshark/plugins/.
--
-- Registered on UDP port 6543 (TVP_PORT, the hypervisor's default
-- `receiver =`), and as a heuristic on any UDP port: the magic
-- "TVNP" and version 1.  The CRC-32 is checked (tracevisor.crc_ok); a
-- CONTROL's HMAC tag is shown, not checked (the key is not known here).

local p = Proto("tracevisor", "tracevisor export protocol")

local TYPES = {
	[1] = "HELLO", [2] = "HELLO_ACK", [3] = "DATA", [4] = "PT", [5] = "ACK",
	[6] = "HEARTBEAT", [7] = "LOSS", [8] = "CONTROL", [9] = "CONTROL_REPLY",
}
-- TV_SOURCE_LIST in vmm/trace/format.h; tests/build/source-list.sh checks this line
-- (its --print gives the line to paste after a change there).
local SOURCES = { [0] = "none", [1] = "mtf", [2] = "btf", [3] = "lbr", [4] = "bts", [5] = "pt" }
local OVERFLOW = { [0] = "stop", [1] = "overwrite" }
local VENDORS = { [0] = "other", [1] = "intel", [2] = "amd" }
local OPS = { [0] = "NOP", [1] = "START", [2] = "STOP", [3] = "FILTERS", [4] = "MARKER",
	[5] = "MEM_WATCH" }
local MEMW_OPS = { [1] = "ARM", [2] = "REMOVE", [3] = "LABEL" }
local STATUS = { [0] = "applied", [-1] = "unsupported", [-2] = "failed" }
local REC_TYPES = {
	[0] = "PAD", [1] = "BRANCH", [2] = "BRANCH_COMPACT", [3] = "LBR", [4] = "CR3",
	[5] = "START", [6] = "STOP", [7] = "CONFIG", [8] = "TIME", [9] = "LOG", [10] = "IMAGE",
	[11] = "LOST", [12] = "MARKER", [13] = "PT_SYNC", [14] = "CODE", [15] = "CODE_DATA",
	[16] = "MEM", [17] = "MEM_WATCH", [18] = "MEM_STATS",
}

local f = {
	magic = ProtoField.uint32("tracevisor.magic", "Magic", base.HEX),
	version = ProtoField.uint8("tracevisor.version", "Version"),
	type = ProtoField.uint8("tracevisor.type", "Type", base.DEC, TYPES),
	length = ProtoField.uint16("tracevisor.length", "Length"),
	session = ProtoField.uint64("tracevisor.session", "Session", base.HEX),
	stream = ProtoField.uint16("tracevisor.stream", "Stream", base.HEX),
	cpu = ProtoField.uint16("tracevisor.cpu", "CPU"),
	pt_stream = ProtoField.bool("tracevisor.pt_stream", "PT stream"),
	flags = ProtoField.uint16("tracevisor.flags", "Flags", base.HEX),
	crc = ProtoField.uint32("tracevisor.crc", "CRC-32", base.HEX),
	crc_ok = ProtoField.bool("tracevisor.crc_ok", "CRC-32 good"),

	hello_seq = ProtoField.uint32("tracevisor.hello.seq", "Hello seq"),
	cpu_count = ProtoField.uint16("tracevisor.hello.cpu_count", "CPU count"),
	source = ProtoField.uint8("tracevisor.hello.source", "Trace source", base.DEC, SOURCES),
	overflow = ProtoField.uint8("tracevisor.hello.overflow", "Overflow policy", base.DEC, OVERFLOW),
	vendor_id = ProtoField.uint8("tracevisor.hello.vendor_id", "Vendor", base.DEC, VENDORS),
	stepping = ProtoField.uint8("tracevisor.hello.stepping", "Stepping"),
	family = ProtoField.uint16("tracevisor.hello.family", "Family"),
	model = ProtoField.uint16("tracevisor.hello.model", "Model", base.HEX),
	caps = ProtoField.uint32("tracevisor.hello.caps", "Capabilities", base.HEX),
	tsc_hz = ProtoField.uint64("tracevisor.hello.tsc_hz", "TSC Hz"),
	boot_tsc = ProtoField.uint64("tracevisor.hello.boot_tsc", "Boot TSC"),
	ring_bytes = ProtoField.uint64("tracevisor.hello.ring_bytes", "Ring bytes"),
	unix_ns = ProtoField.uint64("tracevisor.hello.unix_ns", "Wall clock (ns)"),
	vendor = ProtoField.string("tracevisor.hello.vendor", "Vendor string"),
	sw_version = ProtoField.string("tracevisor.hello.sw_version", "Software version"),
	machine = ProtoField.string("tracevisor.hello.machine", "Machine"),

	ack_hello_seq = ProtoField.uint32("tracevisor.hello_ack.seq", "Hello seq acknowledged"),

	first_seq = ProtoField.uint64("tracevisor.data.first_seq", "First seq"),
	base_to = ProtoField.uint64("tracevisor.data.base_to", "Base to", base.HEX),
	count = ProtoField.uint16("tracevisor.data.count", "Records"),
	f_base = ProtoField.bool("tracevisor.data.base", "BASE", 16, nil, 0x0001),
	f_retx = ProtoField.bool("tracevisor.data.retransmit", "RETRANSMIT", 16, nil, 0x0002),
	f_first = ProtoField.bool("tracevisor.data.first", "FIRST", 16, nil, 0x0004),
	rec_type = ProtoField.uint8("tracevisor.rec.type", "Record type", base.DEC, REC_TYPES),
	rec_size = ProtoField.uint16("tracevisor.rec.size", "Record size"),
	rec_seq = ProtoField.uint64("tracevisor.rec.seq", "Record seq"),
	rec_from = ProtoField.uint64("tracevisor.rec.from", "From", base.HEX),
	rec_to = ProtoField.uint64("tracevisor.rec.to", "To", base.HEX),
	-- memory-access tracing (vmm/trace/format.h: tv_rec_mem, tv_rec_mem_watch)
	rec_mem_flags = ProtoField.uint32("tracevisor.rec.mem.aux", "Flags, CPL, watch id", base.HEX),
	rec_mem_size = ProtoField.uint8("tracevisor.rec.mem.size", "Access size"),
	rec_mem_rip = ProtoField.uint64("tracevisor.rec.mem.rip", "RIP", base.HEX),
	rec_mem_gla = ProtoField.uint64("tracevisor.rec.mem.gla", "Guest-linear address", base.HEX),
	rec_mem_gpa = ProtoField.uint64("tracevisor.rec.mem.gpa", "Guest-physical address", base.HEX),
	rec_mem_lo = ProtoField.uint64("tracevisor.rec.mem.lo", "Watch lo", base.HEX),
	rec_mem_hi = ProtoField.uint64("tracevisor.rec.mem.hi", "Watch hi", base.HEX),

	pt_offset = ProtoField.uint64("tracevisor.pt.offset", "PT offset"),
	pt_len = ProtoField.uint32("tracevisor.pt.len", "PT bytes"),
	-- PT flags: DATA's bits 1 and 2 (bit 0, BASE, has no use for PT and stays 0)
	pt_retx = ProtoField.bool("tracevisor.pt.retransmit", "RETRANSMIT", 16, nil, 0x0002),
	pt_first = ProtoField.bool("tracevisor.pt.first", "FIRST", 16, nil, 0x0004),

	cum = ProtoField.uint64("tracevisor.ack.cum", "Cumulative"),
	highest = ProtoField.uint64("tracevisor.ack.highest", "Highest"),
	nranges = ProtoField.uint16("tracevisor.ack.nranges", "Missing ranges"),
	r_first = ProtoField.uint64("tracevisor.ack.range_first", "Missing first"),
	r_end = ProtoField.uint64("tracevisor.ack.range_end", "Missing end"),

	hb_tsc = ProtoField.uint64("tracevisor.hb.tsc", "TSC"),
	hb_seq = ProtoField.uint32("tracevisor.hb.seq", "Heartbeat seq"),
	hb_first_cpu = ProtoField.uint16("tracevisor.hb.first_cpu", "First CPU"),
	hb_ncpus = ProtoField.uint16("tracevisor.hb.ncpus", "CPUs"),
	ctl_accepted = ProtoField.uint32("tracevisor.hb.ctl_accepted", "CONTROL accepted"),
	ctl_bad_auth = ProtoField.uint32("tracevisor.hb.ctl_bad_auth", "CONTROL bad tag"),
	ctl_replay = ProtoField.uint32("tracevisor.hb.ctl_replay", "CONTROL replayed"),
	ctl_bad_session = ProtoField.uint32("tracevisor.hb.ctl_bad_session", "CONTROL other session"),
	ctl_malformed = ProtoField.uint32("tracevisor.hb.ctl_malformed", "Malformed from receiver"),
	tx_errors = ProtoField.uint32("tracevisor.hb.tx_errors", "Send errors"),
	hb_cpu = ProtoField.uint32("tracevisor.hb.cpu", "CPU"),
	produced = ProtoField.uint64("tracevisor.hb.produced", "Produced"),
	sent = ProtoField.uint64("tracevisor.hb.sent", "Sent"),
	retransmitted = ProtoField.uint64("tracevisor.hb.retransmitted", "Retransmitted"),
	lost_overwrite = ProtoField.uint64("tracevisor.hb.lost_overwrite", "Lost (overwritten)"),
	head_seq = ProtoField.uint64("tracevisor.hb.head_seq", "Head seq"),
	acked = ProtoField.uint64("tracevisor.hb.acked", "Acked"),
	ring_dropped = ProtoField.uint64("tracevisor.hb.ring_dropped", "Ring dropped"),

	loss_first = ProtoField.uint64("tracevisor.loss.first_seq", "First lost"),
	loss_count = ProtoField.uint64("tracevisor.loss.count", "Count"),
	loss_total = ProtoField.uint64("tracevisor.loss.total", "Total"),

	ctl_counter = ProtoField.uint64("tracevisor.ctl.counter", "Counter"),
	ctl_op = ProtoField.uint16("tracevisor.ctl.op", "Op", base.DEC, OPS),
	ctl_arg_len = ProtoField.uint16("tracevisor.ctl.arg_len", "Argument bytes"),
	ctl_mask = ProtoField.bytes("tracevisor.ctl.cpu_mask", "CPU mask"),
	ctl_cpl = ProtoField.uint32("tracevisor.ctl.cpl", "CPL bits", base.HEX),
	ctl_franges = ProtoField.uint32("tracevisor.ctl.filter_ranges", "Filter ranges"),
	ctl_cr3 = ProtoField.uint64("tracevisor.ctl.cr3", "CR3", base.HEX),
	ctl_lo = ProtoField.uint64("tracevisor.ctl.lo", "Range lo", base.HEX),
	ctl_hi = ProtoField.uint64("tracevisor.ctl.hi", "Range hi", base.HEX),
	ctl_value = ProtoField.uint64("tracevisor.ctl.marker_value", "Marker value", base.HEX),
	ctl_cpu = ProtoField.uint32("tracevisor.ctl.marker_cpu", "Marker CPU", base.HEX),
	ctl_label = ProtoField.string("tracevisor.ctl.label", "Marker label"),
	ctl_mw_op = ProtoField.uint8("tracevisor.ctl.mem_watch.op", "Watch op", base.DEC, MEMW_OPS),
	ctl_mw_mode = ProtoField.uint8("tracevisor.ctl.mem_watch.mode", "Watch mode (1 r, 2 w, 3 rw)"),
	ctl_mw_id = ProtoField.uint16("tracevisor.ctl.mem_watch.id", "Watch id"),
	ctl_mw_label = ProtoField.string("tracevisor.ctl.mem_watch.label", "Watch label"),
	ctl_tag = ProtoField.bytes("tracevisor.ctl.tag", "HMAC-SHA256 tag"),

	reply_counter = ProtoField.uint64("tracevisor.reply.counter", "Counter"),
	reply_op = ProtoField.uint16("tracevisor.reply.op", "Op", base.DEC, OPS),
	reply_status = ProtoField.int32("tracevisor.reply.status", "Status", base.DEC, STATUS),
}
local list = {}
for _, v in pairs(f) do list[#list + 1] = v end
p.fields = list

local e_crc = ProtoExpert.new("tracevisor.crc_bad", "CRC-32 mismatch", expert.group.CHECKSUM,
	expert.severity.ERROR)
local e_short = ProtoExpert.new("tracevisor.short", "Datagram shorter than its type needs",
	expert.group.MALFORMED, expert.severity.ERROR)
p.experts = { e_crc, e_short }

-- CRC-32 (IEEE 802.3, reflected 0xEDB88320), as zlib's crc32().
local crc_table = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if bit32.band(c, 1) ~= 0 then
			c = bit32.bxor(0xEDB88320, bit32.rshift(c, 1))
		else
			c = bit32.rshift(c, 1)
		end
	end
	crc_table[i] = c
end

local function crc32(bytes, len)
	local c = 0xFFFFFFFF
	for i = 0, len - 1 do
		local b = bytes:get_index(i)
		if i >= 20 and i < 24 then b = 0 end   -- the crc field counts as 0
		c = bit32.bxor(crc_table[bit32.band(bit32.bxor(c, b), 0xFF)], bit32.rshift(c, 8))
	end
	return bit32.bxor(c, 0xFFFFFFFF)
end

local function u64s(tvb, off)
	return tostring(tvb(off, 8):le_uint64())
end

local function dissect_records(tvb, tree, off, first_seq, count)
	local seq = first_seq
	local n = 0
	while off + 8 <= tvb:len() and n < count do
		local size = tvb(off + 2, 2):le_uint()
		if size < 8 or size % 8 ~= 0 or off + size > tvb:len() then break end
		local rtype = tvb(off, 1):uint()
		local t = tree:add(tvb(off, size), string.format("Record %s: %s, %d bytes",
			tostring(seq), REC_TYPES[rtype] or ("type " .. rtype), size))
		t:add(f.rec_seq, tvb(off, 0), seq)
		t:add_le(f.rec_type, tvb(off, 1))
		t:add_le(f.rec_size, tvb(off + 2, 2))
		if rtype == 1 and size >= 24 then
			t:add_le(f.rec_from, tvb(off + 8, 8))
			t:add_le(f.rec_to, tvb(off + 16, 8))
		elseif rtype == 2 and size >= 16 then
			t:add_le(f.rec_to, tvb(off + 8, 8))
		elseif rtype == 16 and size >= 72 then
			t:add_le(f.rec_mem_size, tvb(off + 1, 1))
			t:add_le(f.rec_mem_flags, tvb(off + 4, 4))
			t:add_le(f.rec_mem_rip, tvb(off + 16, 8))
			t:add_le(f.rec_mem_gla, tvb(off + 32, 8))
			t:add_le(f.rec_mem_gpa, tvb(off + 40, 8))
		elseif rtype == 17 and size >= 48 then
			t:add_le(f.rec_mem_lo, tvb(off + 16, 8))
			t:add_le(f.rec_mem_hi, tvb(off + 24, 8))
		end
		off = off + size
		seq = seq + 1
		n = n + 1
	end
end

local function dissect_body(ty, tvb, tree, pinfo, len, info)
	local o = 24
	if ty == 1 then -- HELLO
		tree:add_le(f.hello_seq, tvb(o, 4))
		tree:add_le(f.cpu_count, tvb(o + 4, 2))
		tree:add_le(f.source, tvb(o + 6, 1))
		tree:add_le(f.overflow, tvb(o + 7, 1))
		tree:add_le(f.vendor_id, tvb(o + 8, 1))
		tree:add_le(f.stepping, tvb(o + 9, 1))
		tree:add_le(f.family, tvb(o + 10, 2))
		tree:add_le(f.model, tvb(o + 12, 2))
		tree:add_le(f.caps, tvb(o + 16, 4))
		tree:add_le(f.tsc_hz, tvb(o + 24, 8))
		tree:add_le(f.boot_tsc, tvb(o + 32, 8))
		tree:add_le(f.ring_bytes, tvb(o + 40, 8))
		tree:add_le(f.unix_ns, tvb(o + 48, 8))
		tree:add(f.vendor, tvb(o + 56, 12))
		tree:add(f.sw_version, tvb(o + 68, 28))
		tree:add(f.machine, tvb(o + 96, 64))
		return string.format("%s, %d CPUs, source %s", tvb(o + 96, 64):stringz(),
			tvb(o + 4, 2):le_uint(), SOURCES[tvb(o + 6, 1):uint()] or "?")
	elseif ty == 2 then -- HELLO_ACK
		tree:add_le(f.ack_hello_seq, tvb(o, 4))
		return "seq " .. tvb(o, 4):le_uint()
	elseif ty == 3 then -- DATA
		local first = tvb(o, 8):le_uint64()
		local count = tvb(o + 16, 2):le_uint()
		tree:add_le(f.first_seq, tvb(o, 8))
		tree:add_le(f.base_to, tvb(o + 8, 8))
		tree:add_le(f.count, tvb(o + 16, 2))
		dissect_records(tvb, tree, o + 24, first, count)
		return string.format("seq %s, %d records", tostring(first), count)
	elseif ty == 4 then -- PT
		tree:add_le(f.pt_offset, tvb(o, 8))
		tree:add(f.pt_len, tvb(o + 16, len - o - 16), len - o - 16)
		local fl = tvb(18, 2):le_uint()
		return string.format("offset %s, %d bytes%s%s", u64s(tvb, o), len - o - 16,
			bit32.band(fl, 0x0004) ~= 0 and ", FIRST" or "",
			bit32.band(fl, 0x0002) ~= 0 and ", RETRANSMIT" or "")
	elseif ty == 5 then -- ACK
		local n = tvb(o + 16, 2):le_uint()
		tree:add_le(f.cum, tvb(o, 8))
		tree:add_le(f.highest, tvb(o + 8, 8))
		tree:add_le(f.nranges, tvb(o + 16, 2))
		for i = 0, n - 1 do
			local ro = o + 24 + 16 * i
			if ro + 16 > len then break end
			local rt = tree:add(tvb(ro, 16), string.format("Missing %s..%s",
				u64s(tvb, ro), u64s(tvb, ro + 8)))
			rt:add_le(f.r_first, tvb(ro, 8))
			rt:add_le(f.r_end, tvb(ro + 8, 8))
		end
		return string.format("cum %s, highest %s%s", u64s(tvb, o), u64s(tvb, o + 8),
			n > 0 and string.format(", NACK %d ranges", n) or "")
	elseif ty == 6 then -- HEARTBEAT
		local n = tvb(o + 14, 2):le_uint()
		tree:add_le(f.hb_tsc, tvb(o, 8))
		tree:add_le(f.hb_seq, tvb(o + 8, 4))
		tree:add_le(f.hb_first_cpu, tvb(o + 12, 2))
		tree:add_le(f.hb_ncpus, tvb(o + 14, 2))
		tree:add_le(f.ctl_accepted, tvb(o + 16, 4))
		tree:add_le(f.ctl_bad_auth, tvb(o + 20, 4))
		tree:add_le(f.ctl_replay, tvb(o + 24, 4))
		tree:add_le(f.ctl_bad_session, tvb(o + 28, 4))
		tree:add_le(f.ctl_malformed, tvb(o + 32, 4))
		tree:add_le(f.tx_errors, tvb(o + 36, 4))
		for i = 0, n - 1 do
			local eo = o + 40 + 64 * i
			if eo + 64 > len then break end
			local et = tree:add(tvb(eo, 64), "CPU " .. tvb(eo, 4):le_uint())
			et:add_le(f.hb_cpu, tvb(eo, 4))
			et:add_le(f.produced, tvb(eo + 8, 8))
			et:add_le(f.sent, tvb(eo + 16, 8))
			et:add_le(f.retransmitted, tvb(eo + 24, 8))
			et:add_le(f.lost_overwrite, tvb(eo + 32, 8))
			et:add_le(f.head_seq, tvb(eo + 40, 8))
			et:add_le(f.acked, tvb(eo + 48, 8))
			et:add_le(f.ring_dropped, tvb(eo + 56, 8))
		end
		return string.format("seq %d, %d CPUs", tvb(o + 8, 4):le_uint(), n)
	elseif ty == 7 then -- LOSS
		tree:add_le(f.loss_first, tvb(o, 8))
		tree:add_le(f.loss_count, tvb(o + 8, 8))
		tree:add_le(f.loss_total, tvb(o + 16, 8))
		return string.format("lost %s from %s (total %s)", u64s(tvb, o + 8), u64s(tvb, o),
			u64s(tvb, o + 16))
	elseif ty == 8 then -- CONTROL
		local op = tvb(o + 8, 2):le_uint()
		local alen = tvb(o + 10, 2):le_uint()
		local a = o + 16
		tree:add_le(f.ctl_counter, tvb(o, 8))
		tree:add_le(f.ctl_op, tvb(o + 8, 2))
		tree:add_le(f.ctl_arg_len, tvb(o + 10, 2))
		if (op == 1 or op == 2) and alen == 128 and a + 128 <= len then
			tree:add(f.ctl_mask, tvb(a, 128))
		elseif op == 3 and alen == 80 and a + 80 <= len then
			tree:add_le(f.ctl_cpl, tvb(a, 4))
			tree:add_le(f.ctl_franges, tvb(a + 4, 4))
			tree:add_le(f.ctl_cr3, tvb(a + 8, 8))
			for i = 0, 3 do
				tree:add_le(f.ctl_lo, tvb(a + 16 + 16 * i, 8))
				tree:add_le(f.ctl_hi, tvb(a + 24 + 16 * i, 8))
			end
		elseif op == 4 and alen >= 16 and a + alen <= len then
			tree:add_le(f.ctl_value, tvb(a, 8))
			tree:add_le(f.ctl_cpu, tvb(a + 8, 4))
			if alen > 16 then tree:add(f.ctl_label, tvb(a + 16, alen - 16)) end
		elseif op == 5 and alen >= 24 and a + alen <= len then
			tree:add_le(f.ctl_lo, tvb(a, 8))
			tree:add_le(f.ctl_hi, tvb(a + 8, 8))
			tree:add_le(f.ctl_mw_op, tvb(a + 16, 1))
			tree:add_le(f.ctl_mw_mode, tvb(a + 17, 1))
			tree:add_le(f.ctl_mw_id, tvb(a + 18, 2))
			if alen > 24 then tree:add(f.ctl_mw_label, tvb(a + 24, alen - 24)) end
		end
		if len >= 24 + 16 + 32 then tree:add(f.ctl_tag, tvb(len - 32, 32)) end
		return string.format("%s, counter %s", OPS[op] or ("op " .. op), u64s(tvb, o))
	elseif ty == 9 then -- CONTROL_REPLY
		tree:add_le(f.reply_counter, tvb(o, 8))
		tree:add_le(f.reply_op, tvb(o + 8, 2))
		tree:add_le(f.reply_status, tvb(o + 12, 4))
		local st = tvb(o + 12, 4):le_int()
		return string.format("%s, counter %s, %s", OPS[tvb(o + 8, 2):le_uint()] or "?",
			u64s(tvb, o), STATUS[st] or tostring(st))
	end
	return ""
end

-- Minimum datagram length per type (header + fixed body).
local MINLEN = { [1] = 184, [2] = 32, [3] = 56, [4] = 41, [5] = 48, [6] = 64, [7] = 48,
	[8] = 72, [9] = 40 }

function p.dissector(tvb, pinfo, root)
	local len = tvb:len()
	if len < 24 or tvb(0, 4):le_uint() ~= 0x504e5654 then return 0 end
	pinfo.cols.protocol = "TRACEVISOR"
	local tree = root:add(p, tvb(), "tracevisor export protocol")
	local ty = tvb(5, 1):uint()
	local stream = tvb(16, 2):le_uint()
	tree:add_le(f.magic, tvb(0, 4))
	tree:add_le(f.version, tvb(4, 1))
	tree:add_le(f.type, tvb(5, 1))
	tree:add_le(f.length, tvb(6, 2))
	tree:add_le(f.session, tvb(8, 8))
	local st = tree:add_le(f.stream, tvb(16, 2))
	if ty == 3 or ty == 4 or ty == 5 or ty == 7 then
		st:add(f.cpu, tvb(16, 2), bit32.band(stream, 0x7fff))
		st:add(f.pt_stream, tvb(16, 2), bit32.band(stream, 0x8000) ~= 0)
	end
	local ft = tree:add_le(f.flags, tvb(18, 2))
	if ty == 3 then
		ft:add_le(f.f_base, tvb(18, 2))
		ft:add_le(f.f_retx, tvb(18, 2))
		ft:add_le(f.f_first, tvb(18, 2))
	elseif ty == 4 then
		ft:add_le(f.pt_retx, tvb(18, 2))
		ft:add_le(f.pt_first, tvb(18, 2))
	end
	local ci = tree:add_le(f.crc, tvb(20, 4))
	local good = crc32(tvb:bytes(), len) == tvb(20, 4):le_uint()
	ci:add(f.crc_ok, tvb(20, 4), good)
	if not good then ci:add_proto_expert_info(e_crc) end
	local name = TYPES[ty] or ("type " .. ty)
	local info = name
	if ty == 3 or ty == 4 or ty == 5 or ty == 7 then
		info = info .. string.format(" cpu %d%s", bit32.band(stream, 0x7fff),
			bit32.band(stream, 0x8000) ~= 0 and " (PT)" or "")
	end
	if MINLEN[ty] and len >= MINLEN[ty] then
		local ok, more = pcall(dissect_body, ty, tvb, tree, pinfo, len, info)
		if ok and more ~= "" then info = info .. ": " .. more end
	elseif MINLEN[ty] then
		tree:add_proto_expert_info(e_short)
	end
	if not good then info = info .. " [bad CRC]" end
	pinfo.cols.info = info
	return len
end

local function heuristic(tvb, pinfo, root)
	if tvb:len() < 24 or tvb(0, 4):le_uint() ~= 0x504e5654 or tvb(4, 1):uint() ~= 1 then
		return false
	end
	p.dissector(tvb, pinfo, root)
	return true
end

local udp = DissectorTable.get("udp.port")
udp:add(6543, p)
p:register_heuristic("udp", heuristic)
