-- wrk script: update.lua's single-op PATCH updateItem, each request with a fresh
-- Idempotency-Key. By default a UUIDv7 (RFC 9562) as listd's clients make them
-- (ListClient's RetryPolicy, clients/js idempotencyKey): 48 bits of time that only
-- grow, a 12-bit counter, 62 random bits; the time field here counts requests from
-- the run's start (wrk's Lua has no millisecond clock), so the keys sort in the
-- order they are sent, as a client's do. With KEYS=random a random UUIDv4 (keys in
-- no order, as clients that send random UUIDs have).
-- [KEYS=random] LIST_PATH=/lists/<id> ITEMS=<count> wrk -t1 -c64 -d10s -s update-idempotent.lua http://127.0.0.1:8080
local path = os.getenv("LIST_PATH")
local items = tonumber(os.getenv("ITEMS"))
local counter = 0
math.randomseed(os.time())
local random = os.getenv("KEYS") == "random"
local start = os.time() * 1000
local function hex(digits)  -- `digits` (3, 4, 8 or 12) random hex digits, made cheaply: wrk shares the cores
    if digits == 12 then return string.format("%06x%06x", math.random(0, 0xffffff), math.random(0, 0xffffff)) end
    return string.format("%0" .. digits .. "x", math.random(0, 16 ^ digits - 1))
end
local function uuidv7()
    local time = start + counter
    local high = math.floor(time / 0x10000)
    local low = time % 0x10000
    return string.format("%08x-%04x-7%03x-%x%s-%s", high, low, counter % 0x1000,
        8 + math.random(0, 3), hex(3), hex(12))
end
local function uuidv4()
    return string.format("%s-%s-4%s-%x%s-%s", hex(8), hex(4), hex(3), 8 + math.random(0, 3), hex(3), hex(12))
end
request = function()
    counter = counter + 1
    local body = string.format('{"ops":[{"op":"updateItem","id":"i%d","model":{"c":%d}}]}', math.random(0, items - 1), counter)
    local key = random and uuidv4() or uuidv7()
    local headers = {["Content-Type"] = "application/json", ["Idempotency-Key"] = key}
    return wrk.format("PATCH", path, headers, body)
end
response = function(status, headers, body)
    if status ~= 200 then
        io.stderr:write("status " .. status .. ": " .. body .. "\n")
    end
end
