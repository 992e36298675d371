-- wrk script: single-op PATCH updateItem of a random item of one list.
-- LIST_PATH=/lists/<id> ITEMS=<count> wrk -t1 -c64 -d10s -s update.lua http://127.0.0.1:8080
local path = os.getenv("LIST_PATH")
local items = tonumber(os.getenv("ITEMS"))
local counter = 0
math.randomseed(os.time())
request = function()
    counter = counter + 1
    local body = string.format('{"ops":[{"op":"updateItem","id":"i%d","model":{"c":%d}}]}', math.random(0, items - 1), counter)
    return wrk.format("PATCH", path, {["Content-Type"] = "application/json"}, body)
end
response = function(status, headers, body)
    if status ~= 200 then
        io.stderr:write("status " .. status .. ": " .. body .. "\n")
    end
end
