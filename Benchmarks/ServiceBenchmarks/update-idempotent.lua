-- wrk script: update.lua's single-op PATCH updateItem, each request with a fresh
-- Idempotency-Key: a random run id and a counter (keys that arrive nearly in order,
-- as UUIDv7 keys, which listd's clients send, do), or with KEYS=random a random
-- 64-bit hex number (keys in no order, as clients that send random UUIDs have).
-- [KEYS=random] LIST_PATH=/lists/<id> ITEMS=<count> wrk -t1 -c64 -d10s -s update-idempotent.lua http://127.0.0.1:8080
local path = os.getenv("LIST_PATH")
local items = tonumber(os.getenv("ITEMS"))
local counter = 0
math.randomseed(os.time())
local run = string.format("%08x", math.random(0, 0x7fffffff))
local random = os.getenv("KEYS") == "random"
request = function()
    counter = counter + 1
    local body = string.format('{"ops":[{"op":"updateItem","id":"i%d","model":{"c":%d}}]}', math.random(0, items - 1), counter)
    local key = run .. "-" .. counter
    if random then key = string.format("%08x%08x", math.random(0, 0x7fffffff), math.random(0, 0x7fffffff)) end
    local headers = {["Content-Type"] = "application/json", ["Idempotency-Key"] = key}
    return wrk.format("PATCH", path, headers, body)
end
response = function(status, headers, body)
    if status ~= 200 then
        io.stderr:write("status " .. status .. ": " .. body .. "\n")
    end
end
