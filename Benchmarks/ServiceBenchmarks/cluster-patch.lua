-- One single-op PATCH per request, on one of 16 lists, with a fresh item id.
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
wrk.method = "PATCH"
wrk.headers["Content-Type"] = "application/json"
request = function()
  local list = "bench" .. math.random(0, 15)
  local id = string.format("i%d_%d", math.random(1, 1000000000), math.random(1, 1000000000))
  return wrk.format(nil, "/lists/" .. list, nil,
    '{"ops":[{"op":"insertItem","section":"s","item":{"id":"' .. id .. '","model":{}}}]}')
end
