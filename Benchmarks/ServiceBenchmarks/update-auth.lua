-- wrk script: single-op PATCH updateItem of a random item, with a bearer token.
-- LIST_PATH=/lists/<id> ITEMS=<count> TOKEN=<token> wrk -t1 -c16 -d10s -s update-auth.lua http://127.0.0.1:8080
local path = os.getenv("LIST_PATH")
local items = tonumber(os.getenv("ITEMS"))
local token = os.getenv("TOKEN")
local counter = 0
math.randomseed(os.time())
request = function()
    counter = counter + 1
    local body = string.format('{"ops":[{"op":"updateItem","id":"i%d","model":{"c":%d}}]}', math.random(0, items - 1), counter)
    return wrk.format("PATCH", path, {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token}, body)
end
response = function(status, headers, body)
    if status ~= 200 then
        io.stderr:write("status " .. status .. ": " .. body .. "\n")
    end
end
