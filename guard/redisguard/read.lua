
local out = {redis.call('GET', KEYS[1]) or '0'}
for i = 2, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then out[#out + 1] = '1'; out[#out + 1] = v else out[#out + 1] = '0'; out[#out + 1] = '' end
end
return out
