-- The walker: Kafka's wire rules applied to the tables above. Written by hand; the tables are
-- generated. A frame that does not parse is marked malformed with what failed and where; the
-- walker never trusts a length or count beyond the bytes the frame has.

local kwire = Proto("kwire", "Apache Kafka (kwire)")

local FIXED_SIZE = { bool = 1, int8 = 1, int16 = 2, uint16 = 2, int32 = 4, uint32 = 4, int64 = 8, float64 = 8, uuid = 16 }

-- Body fields, by filter name.
local pf = {}
local all_fields = {}
do
  local make = {
    bool = ProtoField.bool, int8 = ProtoField.int8, int16 = ProtoField.int16, uint16 = ProtoField.uint16,
    int32 = ProtoField.int32, int64 = ProtoField.int64, double = ProtoField.double,
    string = ProtoField.string, bytes = ProtoField.bytes, none = ProtoField.none,
  }
  for _, d in ipairs(FIELDS) do
    local f = make[d[2]](d[1], d[3])
    pf[d[1]] = f
    all_fields[#all_fields + 1] = f
  end
end

local api_names = {}
for key, api in pairs(APIS) do api_names[key] = api.name end

local hf = {
  length = ProtoField.int32("kwire.length", "Length"),
  api_key = ProtoField.int16("kwire.header.api_key", "API key", base.DEC, api_names),
  api_version = ProtoField.int16("kwire.header.api_version", "API version"),
  correlation_id = ProtoField.int32("kwire.header.correlation_id", "Correlation id"),
  client_id = ProtoField.string("kwire.header.client_id", "Client id"),
  response = ProtoField.bool("kwire.response", "Response"),
  request_in = ProtoField.framenum("kwire.request_in", "Request in frame"),
  tag = ProtoField.uint32("kwire.tagged.tag", "Tag"),
  tag_size = ProtoField.uint32("kwire.tagged.size", "Size"),
  tag_bytes = ProtoField.bytes("kwire.tagged.unknown", "Unknown tagged field"),
  batch = ProtoField.none("kwire.batch", "Record batch"),
  base_offset = ProtoField.int64("kwire.batch.base_offset", "Base offset"),
  batch_length = ProtoField.int32("kwire.batch.length", "Batch length"),
  leader_epoch = ProtoField.int32("kwire.batch.partition_leader_epoch", "Partition leader epoch"),
  magic = ProtoField.int8("kwire.batch.magic", "Magic"),
  crc = ProtoField.uint32("kwire.batch.crc", "CRC", base.HEX),
  attributes = ProtoField.uint16("kwire.batch.attributes", "Attributes", base.HEX),
  codec = ProtoField.string("kwire.batch.codec", "Compression"),
  transactional = ProtoField.bool("kwire.batch.transactional", "Transactional"),
  control = ProtoField.bool("kwire.batch.control", "Control"),
  last_offset_delta = ProtoField.int32("kwire.batch.last_offset_delta", "Last offset delta"),
  base_timestamp = ProtoField.int64("kwire.batch.base_timestamp", "Base timestamp"),
  max_timestamp = ProtoField.int64("kwire.batch.max_timestamp", "Max timestamp"),
  producer_id = ProtoField.int64("kwire.batch.producer_id", "Producer id"),
  producer_epoch = ProtoField.int16("kwire.batch.producer_epoch", "Producer epoch"),
  base_sequence = ProtoField.int32("kwire.batch.base_sequence", "Base sequence"),
  record_count = ProtoField.int32("kwire.batch.record_count", "Records"),
  partial = ProtoField.bytes("kwire.batch.partial", "Partial batch"),
}
for _, f in pairs(hf) do all_fields[#all_fields + 1] = f end
kwire.fields = all_fields

local ef = {
  malformed = ProtoExpert.new("kwire.malformed", "Malformed Kafka message", expert.group.MALFORMED, expert.severity.ERROR),
  unknown_version = ProtoExpert.new("kwire.unknown_version", "Api or version not in this dissector's specs", expert.group.UNDECODED, expert.severity.WARN),
  no_request = ProtoExpert.new("kwire.no_request", "Response to a request not in the capture", expert.group.SEQUENCE, expert.severity.NOTE),
}
kwire.experts = { ef.malformed, ef.unknown_version, ef.no_request }

kwire.prefs.ports = Pref.range("Ports", PORTS, "TCP ports of Kafka listeners", 65535)
kwire.prefs.show_secrets = Pref.bool("Show secrets", SHOW_SECRETS, "Show SASL payloads, token HMACs, SCRAM salts and secret config values")

-- Reading ---------------------------------------------------------------------------------------

-- A parse failure: raised with error(), caught once per message and shown as malformed.
local Malformed = {}
local function fail(why)
  error(setmetatable({ why = why }, Malformed), 0)
end

local function in_range(r, v)
  return r ~= nil and r[1] <= v and v <= r[2]
end

-- st: { tvb, off, lim, version, flex, msg, secrets, path }
local function need(st, n)
  if n < 0 or st.off + n > st.lim then
    fail(string.format("%d bytes needed at offset %d, %d left", n, st.off, st.lim - st.off))
  end
end

local function take(st, n)
  need(st, n)
  local r = st.tvb(st.off, n)
  st.off = st.off + n
  return r
end

local function uvarint(st)
  local start, value, scale = st.off, 0, 1
  for _ = 1, 5 do
    local b = take(st, 1):uint()
    value = value + (b % 128) * scale
    if b < 128 then return value end
    scale = scale * 128
  end
  fail(string.format("a varint longer than 5 bytes at offset %d", start))
end

-- A length or count: compact (unsigned varint, plus one) in flexible versions, else int16 for
-- strings and int32 for the rest. -1 is null.
local function length(st, wide)
  if st.flex then return uvarint(st) - 1 end
  if wide then return take(st, 4):int() end
  return take(st, 2):int()
end

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
-- Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, no padding.
local function uuid_text(range)
  local bytes, out = range:bytes(), {}
  for i = 0, 15, 3 do
    local b0, b1, b2 = bytes:get_index(i), (i + 1 < 16) and bytes:get_index(i + 1) or 0, (i + 2 < 16) and bytes:get_index(i + 2) or 0
    local n = b0 * 65536 + b1 * 256 + b2
    local chars = (i + 1 < 16) and 4 or 2
    for j = 1, chars do
      local idx = math.floor(n / 64 ^ (4 - j)) % 64
      out[#out + 1] = B64:sub(idx + 1, idx + 1)
    end
  end
  return table.concat(out)
end

local CODECS = { [0] = "none", "gzip", "snappy", "lz4", "zstd" }

-- Records: their bytes, and each batch's header under them, not its records (they may be
-- compressed, and are the user's data). `range` is the records' bytes, nil when empty.
local function records(st, tree, field, range)
  if range == nil then
    tree:add(field, st.tvb(st.off, 0)):append_text(" (0 bytes)")
    return
  end
  local size = range:len()
  local item = tree:add(field, range)
  item:append_text(string.format(" (%d bytes)", size))
  local off, stop, batches = range:offset(), range:offset() + size, 0
  while stop - off >= 17 do
    local batch_len = st.tvb(off + 8, 4):int()
    local magic = st.tvb(off + 16, 1):int()
    if batch_len < 0 or off + 12 + batch_len > stop then
      item:add(hf.partial, st.tvb(off, stop - off))
      return
    end
    local b = item:add(hf.batch, st.tvb(off, 12 + batch_len))
    b:add(hf.base_offset, st.tvb(off, 8))
    b:add(hf.batch_length, st.tvb(off + 8, 4))
    b:add(hf.leader_epoch, st.tvb(off + 12, 4))
    b:add(hf.magic, st.tvb(off + 16, 1))
    if magic == 2 and batch_len >= 49 then
      local attrs = st.tvb(off + 21, 2):uint()
      b:add(hf.crc, st.tvb(off + 17, 4))
      b:add(hf.attributes, st.tvb(off + 21, 2))
      b:add(hf.codec, st.tvb(off + 21, 2), CODECS[attrs % 8] or ("codec " .. (attrs % 8)))
      b:add(hf.transactional, st.tvb(off + 21, 2), math.floor(attrs / 16) % 2 == 1)
      b:add(hf.control, st.tvb(off + 21, 2), math.floor(attrs / 32) % 2 == 1)
      b:add(hf.last_offset_delta, st.tvb(off + 23, 4))
      b:add(hf.base_timestamp, st.tvb(off + 27, 8))
      b:add(hf.max_timestamp, st.tvb(off + 35, 8))
      b:add(hf.producer_id, st.tvb(off + 43, 8))
      b:add(hf.producer_epoch, st.tvb(off + 51, 2))
      b:add(hf.base_sequence, st.tvb(off + 53, 4))
      b:add(hf.record_count, st.tvb(off + 57, 4))
      b:append_text(string.format(": offset %s, %d records, %s", st.tvb(off, 8):int64():tonumber(), st.tvb(off + 57, 4):int(), CODECS[attrs % 8] or "?"))
    end
    off = off + 12 + batch_len
    batches = batches + 1
  end
  if off < stop then item:add(hf.partial, st.tvb(off, stop - off)) end
  item:append_text(string.format(", %d batches", batches))
end

-- Secrets -----------------------------------------------------------------------------------------

-- Whether a config's value is withheld, by its name: the rule `kwire decode` applies.
local function secret_config_name(name)
  if name == nil then return false end
  local n = name:lower()
  for _, s in ipairs({ "password", "passphrase", "secret", "jaas.config" }) do
    if n:find(s, 1, true) then return true end
  end
  local function ends(suffix) return #n >= #suffix and n:sub(-#suffix) == suffix end
  return ends(".key") or ends("ssl.keystore.certificate.chain") or ends("ssl.truststore.certificates")
end

local function same_path(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end

local function json_name(spec_name)
  return spec_name:sub(1, 1):lower() .. spec_name:sub(2)
end

-- Whether the field `name` of the struct being read at st.path is withheld; `seen` holds the
-- struct's strings read so far (a config's name precedes its value).
local function withheld(st, name, seen)
  if st.show_secrets or st.secrets == nil then return false end
  for _, rule in ipairs(st.secrets) do
    if same_path(rule.path, st.path) then
      if rule.bytes == name then return true end
      if rule.config and rule.config[2] == name and secret_config_name(seen[rule.config[1]]) then return true end
    end
  end
  return false
end

-- Messages ------------------------------------------------------------------------------------------

local read_struct

local function is_struct(ty)
  return FIXED_SIZE[ty] == nil and ty ~= "string" and ty ~= "bytes" and ty ~= "records" and ty:sub(1, 2) ~= "[]"
end

-- One value of type `ty` for the field `fd`, added under `tree`; returns a string's text.
local function read_value(st, tree, fd, ty, nullable, seen)
  local field, label = pf[fd[3]], fd[1]
  local size = FIXED_SIZE[ty]
  if size then
    local r = take(st, size)
    if ty == "uuid" then
      tree:add(field, r, uuid_text(r))
    else
      tree:add(field, r)
    end
    return nil
  end
  local start = st.off
  if ty == "string" or ty == "bytes" or ty == "records" then
    local n = length(st, ty ~= "string")
    if n < 0 then
      if not nullable then fail(string.format("%s is null at offset %d, and not nullable in v%d", label, start, st.version)) end
      tree:add(st.tvb(start, st.off - start), label .. ": null")
      return nil
    end
    local r = take(st, n)
    if ty == "string" then
      local text = r:string(ENC_UTF_8)
      if withheld(st, json_name(label), seen) then
        tree:add(r, string.format("%s: withheld (%d bytes)", label, n))
      else
        -- Wireshark decodes it (a value given here is cut to the bytes' length, mid-character).
        tree:add_packet_field(field, r, ENC_UTF_8)
      end
      return text
    elseif ty == "bytes" then
      if withheld(st, json_name(label), seen) then
        tree:add(r, string.format("%s: withheld (%d bytes)", label, n))
      elseif n == 0 then
        tree:add(field, st.tvb(st.off, 0))
      else
        tree:add(field, r)
      end
    else
      records(st, tree, field, n > 0 and r or nil)
    end
    return nil
  end
  local elem = ty:match("^%[%](.+)$")
  if elem then
    local n = length(st, true)
    if n < 0 then
      if not nullable then fail(string.format("%s is null at offset %d, and not nullable in v%d", label, start, st.version)) end
      tree:add(st.tvb(start, st.off - start), label .. ": null")
      return nil
    end
    -- Every element takes a byte at least, but for structs without fields in a version.
    if n > st.lim - st.off and not is_struct(elem) then
      fail(string.format("%s claims %d elements at offset %d, %d bytes left", label, n, start, st.lim - st.off))
    end
    local item = is_struct(elem) and tree:add(field, st.tvb(start, st.off - start)) or tree:add(st.tvb(start, st.off - start), label)
    item:append_text(string.format(" (%d)", n))
    for i = 1, n do
      if is_struct(elem) then
        local at = st.off
        if st.budget <= 0 then fail("more than 1,000,000 elements in one message") end
        st.budget = st.budget - 1
        local e = item:add(st.tvb(at, 0), string.format("%s [%d]", label, i - 1))
        st.path[#st.path + 1] = json_name(label)
        read_struct(st, e, elem)
        st.path[#st.path] = nil
        e:set_len(st.off - at)
      else
        read_value(st, item, fd, elem, false, seen)
      end
    end
    item:set_len(st.off - start)
    return nil
  end
  -- A struct: a nullable one is preceded by a marker byte (-1 null, 1 present).
  if nullable then
    local marker = take(st, 1):int()
    if marker < 0 then
      tree:add(st.tvb(start, 1), label .. ": null")
      return nil
    end
  end
  local item = tree:add(field, st.tvb(st.off, 0))
  st.path[#st.path + 1] = json_name(label)
  read_struct(st, item, ty)
  st.path[#st.path] = nil
  item:set_len(st.off - start)
  return nil
end

-- The tagged section of a struct in a flexible version: a count, then tag, size and bytes.
local function read_tagged(st, tree, fields, seen)
  local start = st.off
  local count = uvarint(st)
  if count == 0 then return end
  if count > st.lim - st.off then fail(string.format("%d tagged fields at offset %d, %d bytes left", count, start, st.lim - st.off)) end
  for _ = 1, count do
    local at = st.off
    local tag = uvarint(st)
    local size = uvarint(st)
    need(st, size)
    local fd
    for _, f in ipairs(fields) do
      if f.tag == tag and in_range(f.tv, st.version) then fd = f end
    end
    if fd then
      local lim = st.lim
      st.lim = st.off + size
      seen[json_name(fd[1])] = read_value(st, tree, fd, fd[2], in_range(fd.nl, st.version), seen)
      if st.off ~= st.lim then fail(string.format("tagged field %s (tag %d) at offset %d: %d bytes left unread", fd[1], tag, at, st.lim - st.off)) end
      st.lim = lim
    else
      local t = tree:add(st.tvb(at, st.off - at + size), string.format("Unknown tagged field %d (%d bytes)", tag, size))
      t:add(hf.tag, st.tvb(at, 1), tag)
      t:add(hf.tag_size, st.tvb(at, 1), size)
      if size > 0 then t:add(hf.tag_bytes, st.tvb(st.off, size)) end
      st.off = st.off + size
    end
  end
end

function read_struct(st, tree, name)
  local fields = st.msg.structs[name]
  if fields == nil then fail("no struct " .. name .. " in " .. st.name) end
  local seen = {}
  for _, fd in ipairs(fields) do
    if in_range(fd.v, st.version) and not in_range(fd.tv, st.version) then
      seen[json_name(fd[1])] = read_value(st, tree, fd, fd[2], in_range(fd.nl, st.version), seen)
    end
  end
  if st.flex then read_tagged(st, tree, fields, seen) end
end

-- Headers ---------------------------------------------------------------------------------------

-- The header version of a message: as the spec states it, else Kafka's rule (flexible versions
-- have the newer header; ControlledShutdown v0's request and ApiVersions' response the oldest).
local function header_version(api_key, api, version, request)
  local listed = request and api.reqh or api.resph
  if listed then
    for _, h in ipairs(listed) do
      if h[1] <= version and version <= h[2] then return h[3] end
    end
  end
  local flexible = in_range(api.flex, version)
  if request then
    if api_key == 7 and version == 0 then return 0 end
    return flexible and 2 or 1
  end
  if api_key == 18 then return 0 end
  return flexible and 1 or 0
end

-- Requests by TCP stream and correlation id; responses' requests by frame.
local pending = {}
local answered = {}
local tcp_stream = Field.new("tcp.stream")

local function conversation_key(corr)
  local s = tcp_stream()
  return tostring(s and s.value or "?") .. ":" .. tostring(corr)
end

local server_ports = {}
local function is_server_port(port)
  for _, p in ipairs(server_ports) do
    if p == port then return true end
  end
  return false
end

local function body(tvb, tree, api_key, version, request, off, lim)
  local api = APIS[api_key]
  local name = api and (request and api.req or api.resp)
  local msg = name and MESSAGES[name]
  if msg == nil or not in_range(api.valid, version) then
    tree:add_proto_expert_info(ef.unknown_version, string.format("api key %d v%d is not in these specs", api_key, version))
    return
  end
  local rules = SECRETS[api_key] and SECRETS[api_key][request and "request" or "response"]
  local st = {
    tvb = tvb, off = off, lim = lim, version = version, flex = in_range(msg.flex, version), msg = msg, name = name,
    secrets = rules, show_secrets = kwire.prefs.show_secrets, path = {}, budget = 1000000,
  }
  local item = tree:add(tvb(off, lim - off), string.format("%s v%d", name, version))
  read_struct(st, item, name)
  if st.off ~= lim then fail(string.format("%s v%d: %d bytes after the body", name, version, lim - st.off)) end
end

local function header(tvb, pinfo, tree, off, lim, request)
  local st = { tvb = tvb, off = off, lim = lim, flex = false }
  local corr, api_key, version
  if request then
    api_key = tvb(off, 2):int()
    version = tvb(off + 2, 2):int()
    corr = tvb(off + 4, 4):int()
    tree:add(hf.api_key, tvb(off, 2))
    tree:add(hf.api_version, tvb(off + 2, 2))
    tree:add(hf.correlation_id, tvb(off + 4, 4))
    st.off = off + 8
    local api = APIS[api_key]
    if not pinfo.visited then
      pending[conversation_key(corr)] = { api_key = api_key, version = version, frame = pinfo.number }
    end
    if api == nil then return nil end
    local hv = header_version(api_key, api, version, true)
    if hv >= 1 then
      local start = st.off
      local n = take(st, 2):int()
      if n >= 0 then
        local r = take(st, n)
        tree:add_packet_field(hf.client_id, r, ENC_UTF_8)
      else
        tree:add(tvb(start, 2), "Client id: null")
      end
    end
    if hv >= 2 then
      st.flex = true
      read_tagged(st, tree, {}, {})
    end
    return api_key, version, corr, st.off
  end
  corr = tvb(off, 4):int()
  tree:add(hf.correlation_id, tvb(off, 4))
  local key = pinfo.number .. ":" .. corr
  local req = answered[key]
  if req == nil then
    req = pending[conversation_key(corr)]
    if req then answered[key] = req end
  end
  if req == nil then
    tree:add_proto_expert_info(ef.no_request)
    return nil
  end
  tree:add(hf.request_in, req.frame):set_generated()
  tree:add(hf.api_key, req.api_key):set_generated()
  tree:add(hf.api_version, req.version):set_generated()
  st.off = off + 4
  local api = APIS[req.api_key]
  if api == nil then return nil end
  if header_version(req.api_key, api, req.version, false) >= 1 then
    st.flex = true
    read_tagged(st, tree, {}, {})
  end
  return req.api_key, req.version, corr, st.off
end

local info_frame, info_offset = nil, -1

-- One frame: length, header, body.
local function dissect_frame(tvb, pinfo, tree)
  pinfo.cols.protocol = "KWIRE"
  local request = is_server_port(pinfo.dst_port)
  local size = tvb:len()
  local root = tree:add(kwire, tvb())
  root:add(hf.length, tvb(0, 4))
  root:add(hf.response, tvb(0, 0), not request):set_generated()
  local ok, err = pcall(function()
    if size < (request and 12 or 8) then fail(string.format("a frame of %d bytes", size - 4)) end
    local api_key, version, corr, off = header(tvb, pinfo, root, 4, size, request)
    if api_key == nil then
      local what = request and "request" or "response"
      pinfo.cols.info:append(string.format("%s %s", what, corr and ("correlation " .. corr) or ""))
      return
    end
    local api = APIS[api_key]
    local name = api and api.name or ("api " .. api_key)
    root:append_text(string.format(", %s v%d %s, correlation %d", name, version, request and "request" or "response", corr))
    local text = string.format("%s v%d %s", name, version, request and "Request" or "Response")
    -- Several frames in one packet: the first sets the column, the others append.
    if info_frame ~= pinfo.number or tvb:offset() <= info_offset then
      pinfo.cols.info:set(text)
    else
      pinfo.cols.info:append(", " .. text)
    end
    info_frame, info_offset = pinfo.number, tvb:offset()
    body(tvb, root, api_key, version, request, off, size)
  end)
  if not ok then
    if getmetatable(err) == Malformed then
      root:add_proto_expert_info(ef.malformed, err.why)
    else
      error(err, 0)
    end
  end
  return size
end

local function frame_length(tvb, pinfo, offset)
  local n = tvb(offset, 4):int()
  if n < 0 then return 4 end
  return n + 4
end

function kwire.dissector(tvb, pinfo, tree)
  dissect_tcp_pdus(tvb, tree, 4, frame_length, dissect_frame)
  return tvb:len()
end

-- Ports -------------------------------------------------------------------------------------------

local registered = {}
local function register_ports()
  local tcp = DissectorTable.get("tcp.port")
  for _, p in ipairs(registered) do tcp:remove(p, kwire) end
  registered = {}
  local text = tostring(kwire.prefs.ports)
  for part in text:gmatch("[^,]+") do
    local lo, hi = part:match("^%s*(%d+)%s*%-%s*(%d+)%s*$")
    if lo == nil then lo = part:match("^%s*(%d+)%s*$"); hi = lo end
    if lo then
      for p = tonumber(lo), tonumber(hi) do
        tcp:add(p, kwire)
        registered[#registered + 1] = p
      end
    end
  end
  server_ports = registered
end

function kwire.prefs_changed()
  register_ports()
end

function kwire.init()
  pending = {}
  answered = {}
end

register_ports()
