-- wrk script for `make bench` (scripts/bench.sh): a unique body per request.
--
--   wrk -t2 -c32 -d20s -s load.lua URL -- MODE TEMPLATE TAG DOCBASE AUTH [SECRET]
--
-- MODE      unique   every request is a new message (S1, S3, S5, S6)
--           keyed    S7: every request is a new message with its own
--                    Idempotency-Key (the common client pattern)
--           mixed    S2: 50 % exact repeats of an earlier body (fingerprint
--                    duplicates), 10 % Idempotency-Key replays of an earlier
--                    keyed request, 40 % new (a quarter of them with a key)
--           webhook  S4: Standard Webhooks, signed per request (HMAC-SHA256
--                    through libcrypto, which wrk links, via LuaJIT's FFI)
-- TEMPLATE  body with {{DOCNUM}}, {{BELNR}}, {{PONUM}} or {{ID}} markers
-- TAG       run/scenario tag that makes business keys unique across runs
-- DOCBASE   first DOCNUM of this scenario (numeric)
-- AUTH      the Authorization header value (sender key), or "-" for none
-- SECRET    webhook mode: the raw Standard Webhooks key (whsec_ + base64 of it)
--
-- done() prints one line `BENCH_RESULT {json}` that bench.py parses.

local threads = {}
local thread_count = 0

function setup(thread)
   thread_count = thread_count + 1
   thread:set("tid", thread_count)
   table.insert(threads, thread)
end

local mode, tag, docbase, auth, secret
local pieces, markers = {}, {}
local n = 0
local host, path, ctype
local hmac

local function split_template(text)
   local pos = 1
   while true do
      local s, e, name = string.find(text, "{{(%u+)}}", pos)
      if not s then break end
      table.insert(pieces, string.sub(text, pos, s - 1))
      table.insert(markers, name)
      pos = e + 1
   end
   table.insert(pieces, string.sub(text, pos))
end

local function setup_hmac()
   local ffi = require("ffi")
   ffi.cdef [[
      typedef struct evp_md_st EVP_MD;
      const EVP_MD *EVP_sha256(void);
      unsigned char *HMAC(const EVP_MD *evp_md, const void *key, int key_len,
                          const unsigned char *d, size_t n, unsigned char *md, unsigned int *md_len);
      int EVP_EncodeBlock(unsigned char *t, const unsigned char *f, int n);
   ]]
   local ok, C = pcall(function() local c = ffi.C; local _ = c.HMAC; return c end)
   if not ok then C = ffi.load("crypto") end
   local md = ffi.new("unsigned char[64]")
   local len = ffi.new("unsigned int[1]")
   local b64 = ffi.new("unsigned char[96]")
   local sha256 = C.EVP_sha256()
   return function(key, data)
      C.HMAC(sha256, key, #key, data, #data, md, len)
      local m = C.EVP_EncodeBlock(b64, md, len[0])
      return ffi.string(b64, m)
   end
end

function init(args)
   mode, tag, docbase, auth, secret = args[1], args[3], tonumber(args[4]), args[5], args[6]
   local f = assert(io.open(args[2], "rb"))
   split_template(f:read("*a"))
   f:close()
   math.randomseed(tid * 7919 + os.time())
   host = wrk.host .. ":" .. wrk.port
   if mode == "webhook" then
      path = wrk.path
      ctype = "application/json"
      hmac = setup_hmac()
   else
      path = wrk.path
      ctype = "application/xml"
   end
end

-- The values of message m of this thread.
local function body_of(m)
   local docnum = string.format("%016.0f", docbase + tid * 1e11 + m)
   local belnr = tag .. "-" .. tid .. "-" .. m
   local out = {}
   for i = 1, #markers do
      out[#out + 1] = pieces[i]
      local k = markers[i]
      if k == "DOCNUM" then
         out[#out + 1] = docnum
      elseif k == "BELNR" then
         out[#out + 1] = "B" .. belnr
      elseif k == "PONUM" then
         out[#out + 1] = "PO-" .. belnr
      else -- ID
         out[#out + 1] = "evt_" .. belnr
      end
   end
   out[#out + 1] = pieces[#pieces]
   return table.concat(out), "evt_" .. belnr
end

local function http(body, extra)
   local head = "POST " .. path .. " HTTP/1.1\r\nHost: " .. host ..
      "\r\nContent-Type: " .. ctype ..
      "\r\nContent-Length: " .. #body .. "\r\n"
   if auth ~= "-" then
      head = head .. "Authorization: " .. auth .. "\r\n"
   end
   return head .. (extra or "") .. "\r\n" .. body
end

local function keyed(m)
   local body = body_of(m)
   return http(body, "Idempotency-Key: k-" .. tag .. "-" .. tid .. "-" .. m .. "\r\n")
end

function request()
   if mode == "webhook" then
      n = n + 1
      local body, id = body_of(n)
      local ts = tostring(os.time())
      local sig = hmac(secret, id .. "." .. ts .. "." .. body)
      return http(body, "webhook-id: " .. id .. "\r\nwebhook-timestamp: " .. ts ..
         "\r\nwebhook-signature: v1," .. sig .. "\r\n")
   end
   if mode == "mixed" and n >= 64 then
      local r = math.random()
      if r < 0.5 then
         -- an exact repeat of an earlier message, without its key: fingerprint duplicate
         return http((body_of(math.random(math.max(1, n - 2000), n - 48))))
      elseif r < 0.6 then
         -- the same key and body again: Idempotency-Key replay
         local m = math.random(math.max(1, n - 2000), n - 48)
         m = m - (m % 4)
         return keyed(m)
      end
   end
   n = n + 1
   if mode == "keyed" or (mode == "mixed" and n % 4 == 0) then
      return keyed(n)
   end
   return http((body_of(n)))
end

function done(summary, latency, requests)
   local e = summary.errors
   local p = function(q) return latency:percentile(q) end
   io.write(string.format(
      'BENCH_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,"connect_errors":%d,' ..
      '"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d,' ..
      '"lat_mean_us":%.1f,"lat_p50_us":%d,"lat_p90_us":%d,"lat_p99_us":%d,"lat_p999_us":%d,"lat_max_us":%d}\n',
      summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
      latency.mean, p(50), p(90), p(99), p(99.9), latency.max))
end
