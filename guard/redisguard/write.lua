
local function token(s)
  return type(s) == 'string' and #s <= 19 and string.find(s, '^[1-9][0-9]*$') ~= nil
end
local function less(a, b)
  if #a ~= #b then return #a < #b end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end
local tok = ARGV[1]
if not token(tok) then return redis.error_reply('ERR fenceview: invalid token') end
if #KEYS ~= #ARGV then return redis.error_reply('ERR fenceview: keys and values differ in number') end
local mark = redis.call('GET', KEYS[1])
if mark then
  if not token(mark) then
    return redis.error_reply('ERR fenceview: the mark at ' .. KEYS[1] .. ' is not a fencing token')
  end
  if less(tok, mark) then return {'refused', mark} end
else
  mark = '0'
end
redis.call('SET', KEYS[1], tok)
for i = 2, #KEYS do redis.call('SET', KEYS[i], ARGV[i]) end
return {'accepted', mark}
