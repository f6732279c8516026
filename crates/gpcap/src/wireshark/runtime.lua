-- The interpreter every generated dissector carries: it reads a datagram as gpcap's own
-- interpreter does (crates/dissect/src/exec/), from the definition's compiled program written
-- above as tables, into a field list, then shows that list as a Wireshark tree. Lua 5.2
-- to 5.4: no bitwise operators, no integer division; numbers stay below 2^53, wider
-- values are Wireshark's Int64 and UInt64.

local floor, fmod, sqrt, huge = math.floor, math.fmod, math.sqrt, math.huge
local sbyte, schar, sfmt, ssub, srep = string.byte, string.char, string.format, string.sub, string.rep
local tconcat, tinsert = table.concat, table.insert
local unpack_bytes = table.unpack or unpack
local P53, P52, P32 = 2 ^ 53, 2 ^ 52, 2 ^ 32
local POW = {}
for i = 0, 64 do
    POW[i] = 2 ^ i
end

-- Integers as text: `%.0f` of a number (a float in Lua 5.4 prints "3.0" otherwise).
local function istr(n)
    if type(n) == "number" then
        return sfmt("%.0f", n)
    end
    return tostring(n)
end

-- Bits ------------------------------------------------------------------------------

-- `n` (0..32) bits from bit `pos` of `s`, least significant first: the articles' packer,
-- bit i of the stream being bit i % 8 of byte i / 8. The caller checked the bounds.
local function lsb(s, pos, n)
    local v, got = 0, 0
    local i = floor(pos / 8)
    local sh = pos - i * 8
    while got < n do
        local take = 8 - sh
        if take > n - got then
            take = n - got
        end
        local b = floor((sbyte(s, i + 1) or 0) / POW[sh]) % POW[take]
        v = v + b * POW[got]
        got, sh, i = got + take, 0, i + 1
    end
    return v
end

-- `n` (0..32) bits from bit `pos`, most significant first (bit i is bit 7 - i % 8).
local function msb(s, pos, n)
    local v, got = 0, 0
    local i = floor(pos / 8)
    local sh = pos - i * 8
    while got < n do
        local avail = 8 - sh
        local take = avail
        if take > n - got then
            take = n - got
        end
        local b = floor((sbyte(s, i + 1) or 0) / POW[avail - take]) % POW[take]
        v = v * POW[take] + b
        got, sh, i = got + take, 0, i + 1
    end
    return v
end

-- A 64-bit value from its halves: a number when it is one exactly, else a table that
-- knows its halves (shown through UInt64/Int64).
local function wide(lo, hi, signed)
    if hi < 2 ^ 21 then
        return hi * P32 + lo
    end
    if signed and hi >= P32 - 2 ^ 21 then
        return (hi - P32) * P32 + lo
    end
    return { lo = lo, hi = hi, signed = signed }
end

-- The halves of an integer value (a number, or a wide table), two's complement.
local function halves(v)
    if type(v) == "table" then
        return v.lo, v.hi
    end
    if v < 0 then
        local m = -v
        local mhi = floor(m / P32)
        local mlo = m - mhi * P32
        if mlo == 0 then
            return 0, (P32 - mhi) % P32
        end
        return P32 - mlo, P32 - 1 - mhi
    end
    local hi = floor(v / P32)
    return v - hi * P32, hi
end

-- A slot's value for expressions: a number, or an Int64 when it does not fit one.
local function slotval(v)
    if type(v) == "table" then
        return Int64(v.lo, v.hi)
    end
    return v
end

-- Floats ------------------------------------------------------------------------------

local frexp = math.frexp or function(a)
    local e = floor(math.log(a) / math.log(2)) + 1
    local m = a / 2 ^ e
    while m >= 1 do
        m, e = m / 2, e + 1
    end
    while m < 0.5 do
        m, e = m * 2, e - 1
    end
    return m, e
end

-- `x` rounded to the nearest f32 (ties to even): one f32 operation done in doubles and
-- rounded is the f32 operation (53 ≥ 2·24 + 2).
local function fround(x)
    if x ~= x or x == 0 or x == huge or x == -huge then
        return x
    end
    local a = x < 0 and -x or x
    local _, e = frexp(a)
    local q = e < -125 and 2 ^ -149 or 2 ^ (e - 24)
    local r = a / q
    local f = floor(r)
    if f == r then
        return x
    end
    local d = r - f
    if d > 0.5 or (d == 0.5 and f % 2 == 1) then
        f = f + 1
    end
    local y = f * q
    if y >= 2 ^ 128 then
        y = huge
    end
    return x < 0 and -y or y
end

local function f32bits(v)
    local neg = v >= 2 ^ 31
    local e = floor(v / 2 ^ 23) % 256
    local m = v % 2 ^ 23
    local x
    if e == 255 then
        x = m == 0 and huge or 0 / 0
    elseif e == 0 then
        x = m * 2 ^ -149
    else
        x = (1 + m / 2 ^ 23) * 2 ^ (e - 127)
    end
    return neg and -x or x
end

local function f64bits(lo, hi)
    local neg = hi >= 2 ^ 31
    local e = floor(hi / 2 ^ 20) % 2048
    local m = (hi % 2 ^ 20) * P32 + lo
    local x
    if e == 2047 then
        x = m == 0 and huge or 0 / 0
    elseif e == 0 then
        x = m * 2 ^ -1074
    else
        x = (1 + m / P52) * 2 ^ (e - 1023)
    end
    return neg and -x or x
end

-- Decimal text without an exponent, as Rust's `Display` writes floats: the shortest
-- digits that read back as the same value (`digits` at most), placed.
local function placed(s)
    local sign, d1, rest, e = s:match("^(-?)(%d)%.?(%d*)e([-+]%d+)$")
    if not d1 then
        return s
    end
    local digits = (d1 .. rest):gsub("0+$", "")
    if digits == "" then
        digits = "0"
    end
    e = tonumber(e)
    local n = #digits
    local out
    if e >= 0 then
        if n <= e + 1 then
            out = digits .. srep("0", e + 1 - n)
        else
            out = ssub(digits, 1, e + 1) .. "." .. ssub(digits, e + 2)
        end
    else
        out = "0." .. srep("0", -e - 1) .. digits
    end
    return sign .. out
end

-- Rust's shortest digits settle a tie between two candidates upward (Dragon4's "round
-- half up"), C's printf to the even digit: a value exactly halfway is written Rust's way.
local function tie_up(x, p, s)
    local exact = sfmt("%.60e", x)
    local digits, e = exact:match("^-?(%d)%.(%d+)e")
    if not digits then
        return s
    end
    local all = exact:match("^-?(%d)") .. exact:match("^-?%d%.(%d+)e")
    local head, rest = ssub(all, 1, p), ssub(all, p + 1)
    if not rest:match("^50*$") then
        return s
    end
    local out, carry = {}, 1
    for i = #head, 1, -1 do
        local dgt = sbyte(head, i) - 48 + carry
        carry = dgt == 10 and 1 or 0
        out[i] = schar(48 + dgt % 10)
    end
    local mant = tconcat(out)
    local ex = tonumber(exact:match("e([-+]%d+)$"))
    if carry == 1 then
        mant, ex = "1" .. ssub(mant, 1, #mant - 1), ex + 1
    end
    local sign = x < 0 and "-" or ""
    return sign .. ssub(mant, 1, 1) .. (p > 1 and ("." .. ssub(mant, 2)) or "") .. sfmt("e%+03d", ex)
end

local function shortest(x, most, same)
    if x ~= x then
        return "NaN"
    elseif x == huge then
        return "inf"
    elseif x == -huge then
        return "-inf"
    elseif x == 0 then
        return 1 / x < 0 and "-0" or "0"
    end
    for p = 1, most do
        local s = sfmt("%." .. (p - 1) .. "e", x)
        if same(tonumber(s), x) then
            local up = tie_up(x, p, s)
            if up ~= s and same(tonumber(up), x) then
                s = up
            end
            return placed(s)
        end
    end
    return placed(sfmt("%." .. (most - 1) .. "e", x))
end

local function f32text(x)
    return shortest(x, 9, function(y, v)
        return fround(y) == v
    end)
end

local function f64text(x)
    return shortest(x, 17, function(y, v)
        return y == v
    end)
end

-- A compressed float at its resolution (Rust's `{:.d}`: exact decimal, ties to even).
local function fixed(x, d)
    return sfmt("%." .. d .. "f", x)
end

-- Expressions -------------------------------------------------------------------------

-- Operators: 1 const, 2 slot, 3 remaining bytes, 4 remaining bits, 5 !, 6 -, 7 ~, then
-- binary: 10 * 11 / 12 % 13 + 14 - 15 << 16 >> 17 & 18 ^ 19 | 20 < 21 <= 22 > 23 >= 24 ==
-- 25 != 26 && 27 ||. Numbers while every value stays below 2^53 (two's complement over
-- 53 bits for the bitwise operators), Int64 when one does not.
local BIG = {}
local function tw(a)
    if a < 0 then
        return a + P53
    end
    return a
end
local function fw(r)
    if r >= P52 then
        return r - P53
    end
    return r
end
local function bitop(a, b, op)
    a, b = tw(a), tw(b)
    local r, p = 0, 1
    while a > 0 or b > 0 do
        local x, y = a % 16, b % 16
        local bits = 0
        for k = 0, 3 do
            local xb, yb = floor(x / POW[k]) % 2, floor(y / POW[k]) % 2
            local on
            if op == 17 then
                on = xb == 1 and yb == 1
            elseif op == 19 then
                on = xb == 1 or yb == 1
            else
                on = xb ~= yb
            end
            if on then
                bits = bits + POW[k]
            end
        end
        r = r + bits * p
        a, b, p = (a - x) / 16, (b - y) / 16, p * 16
    end
    return fw(r)
end
local function trunc(x)
    if x < 0 then
        return -floor(-x)
    end
    return floor(x)
end
local function num_bin(op, a, b)
    local r
    if op == 10 then
        r = a * b
    elseif op == 11 then
        if b == 0 then
            return false
        end
        r = trunc(a / b)
    elseif op == 12 then
        if b == 0 then
            return false
        end
        r = fmod(a, b)
    elseif op == 13 then
        r = a + b
    elseif op == 14 then
        r = a - b
    elseif op == 15 then
        if b < 0 or b >= 64 then
            return 0
        end
        r = a * POW[b]
    elseif op == 16 then
        if b < 0 then
            b = 0
        elseif b > 63 then
            b = 63
        end
        return floor(a / POW[b])
    elseif op == 17 or op == 18 or op == 19 then
        if a >= P52 or a < -P52 or b >= P52 or b < -P52 then
            return BIG
        end
        return bitop(a, b, op)
    elseif op == 20 then
        return a < b and 1 or 0
    elseif op == 21 then
        return a <= b and 1 or 0
    elseif op == 22 then
        return a > b and 1 or 0
    elseif op == 23 then
        return a >= b and 1 or 0
    elseif op == 24 then
        return a == b and 1 or 0
    elseif op == 25 then
        return a ~= b and 1 or 0
    elseif op == 26 then
        return (a ~= 0 and b ~= 0) and 1 or 0
    else
        return (a ~= 0 or b ~= 0) and 1 or 0
    end
    if r >= P53 or r <= -P53 then
        return BIG
    end
    return r
end

local I64ZERO, I64ONE
local function i64(v)
    if type(v) == "number" then
        return Int64(v)
    end
    return v
end
local function big_bin(op, a, b)
    a, b = i64(a), i64(b)
    local zero = I64ZERO
    if op == 10 then
        return a * b
    elseif op == 11 then
        if b == zero then
            return false
        end
        if b == Int64(-1) then
            return zero - a
        end
        return a / b
    elseif op == 12 then
        if b == zero then
            return false
        end
        if b == Int64(-1) then
            return zero
        end
        return a % b
    elseif op == 13 then
        return a + b
    elseif op == 14 then
        return a - b
    elseif op == 15 then
        if b < zero or b >= Int64(64) then
            return zero
        end
        return a:lshift(b:tonumber())
    elseif op == 16 then
        local n = b < zero and 0 or (b > Int64(63) and 63 or b:tonumber())
        return a:arshift(n)
    elseif op == 17 then
        return a:band(b)
    elseif op == 18 then
        return a:bxor(b)
    elseif op == 19 then
        return a:bor(b)
    end
    local t
    if op == 20 then
        t = a < b
    elseif op == 21 then
        t = a <= b
    elseif op == 22 then
        t = b < a
    elseif op == 23 then
        t = b <= a
    elseif op == 24 then
        t = a == b
    elseif op == 25 then
        t = not (a == b)
    elseif op == 26 then
        t = not (a == zero) and not (b == zero)
    else
        t = not (a == zero) or not (b == zero)
    end
    return t and I64ONE or zero
end

local function small(v)
    if type(v) == "number" then
        return v
    end
    if v >= Int64(-(P53 - 1)) and v < Int64(P53) then
        return v:tonumber()
    end
    return v
end

-- `code` over the slots; `left`: bits left in the datagram. `false`: a division by zero.
local function eval(code, sl, left)
    local function run(bigmode)
        local st, sp = {}, 0
        local i, n = 1, #code
        while i <= n do
            local op = code[i]
            if op <= 4 then
                local v
                if op == 1 then
                    v = code[i + 1]
                    if type(v) == "table" then
                        v = Int64(v[1], v[2])
                    end
                    i = i + 1
                elseif op == 2 then
                    v = sl[code[i + 1]] or 0
                    i = i + 1
                elseif op == 3 then
                    v = floor(left / 8)
                else
                    v = left
                end
                if type(v) ~= "number" and not bigmode then
                    return nil
                end
                if bigmode then
                    v = i64(v)
                end
                sp = sp + 1
                st[sp] = v
            elseif op <= 7 then
                if sp == 0 then
                    return 0
                end
                local a = st[sp]
                if bigmode then
                    if op == 5 then
                        a = (a == I64ZERO) and I64ONE or I64ZERO
                    elseif op == 6 then
                        a = I64ZERO - a
                    else
                        a = a:bnot()
                    end
                else
                    if op == 5 then
                        a = a == 0 and 1 or 0
                    elseif op == 6 then
                        a = -a
                    else
                        a = -a - 1
                    end
                end
                st[sp] = a
            else
                if sp < 2 then
                    return 0
                end
                local r
                if bigmode then
                    r = big_bin(op, st[sp - 1], st[sp])
                else
                    r = num_bin(op, st[sp - 1], st[sp])
                    if r == BIG then
                        return nil
                    end
                end
                if r == false then
                    return false
                end
                sp = sp - 1
                st[sp] = r
            end
            i = i + 1
        end
        if sp == 0 then
            return 0
        end
        return st[sp]
    end
    local v = run(false)
    if v == nil then
        v = run(true)
        if v ~= false then
            v = small(v)
        end
    end
    return v
end

-- Truth of an expression's value.
local function truthy(v)
    if type(v) == "number" then
        return v ~= 0
    end
    return not (v == I64ZERO)
end

-- A count from an expression's value: `.max(0)`, as a number (huge counts stay huge).
local function count_of(v)
    if type(v) == "number" then
        return v < 0 and 0 or v
    end
    if v < I64ZERO then
        return 0
    end
    return v:tonumber()
end

-- The low 32 bits of an integer value, unsigned (`as u32`).
local function low32(v)
    local lo = halves(type(v) == "userdata" and { lo = v:lower(), hi = v:higher() } or v)
    return lo
end

-- Reading a datagram ----------------------------------------------------------------------
-- A reading `c`: the layer `L`, the bytes `s` (`n` bits), the position `pos`, the slots
-- `sl` and the role slots read on this path (`seen`), the fields recorded `f` (each
-- {node, label type, label, kind, parent, depth, bit, len, raw, value, value type,
-- zone}) and the `fault` that stopped it. Every reader returns true, or false with
-- `c.fault` set: the field tree keeps what was read before it, as gpcap's does.

local NODE, INDEX, PART = 1, 2, 3
local ROOT = 0

local function label_name(c, lt, lv)
    if lt == NODE then
        local nd = c.L.N[lv]
        return nd and nd.name or "?"
    elseif lt == INDEX then
        return ""
    end
    return lv
end

-- `objects[3].position.x`: the path of a field named (lt, lv) under field `parent`.
local function path(c, parent, lt, lv)
    local parts = { { lt, lv } }
    local at = parent
    local guard = 0
    while at ~= ROOT and guard < 100000 do
        local f = c.f[at]
        if not f then
            break
        end
        parts[#parts + 1] = { f[2], f[3] }
        at = f[5]
        guard = guard + 1
    end
    local out = {}
    for i = #parts, 1, -1 do
        local lt2, lv2 = parts[i][1], parts[i][2]
        if lt2 == INDEX then
            out[#out + 1] = "[" .. istr(lv2) .. "]"
        else
            if #out > 0 then
                out[#out + 1] = "."
            end
            out[#out + 1] = label_name(c, lt2, lv2)
        end
    end
    return tconcat(out)
end

local function fault(c, kind, field, bit, reason)
    c.fault = { kind = kind, field = field, bit = bit, reason = reason }
    return false
end

local function past_end(c, parent, lt, lv, at, needed)
    local avail = c.n - at
    if avail < 0 then
        avail = 0
    end
    return fault(c, "past_end", path(c, parent, lt, lv), at,
        "past end: needed " .. istr(needed) .. " bits, " .. istr(avail) .. " available")
end

local function out_of_range(c, parent, lt, lv, at, v, lo, hi)
    return fault(c, "out_of_range", path(c, parent, lt, lv), at,
        "value " .. istr(v) .. " out of range [" .. istr(lo) .. ", " .. istr(hi) .. "]")
end

-- Records a field; nil (with the limit's fault) past the most fields a packet may have.
local function push(c, nd, lt, lv, kind, par, dep, bit, len, raw, v, vt)
    local n = c.count + 1
    c.count = n
    if n > c.L.lim.fields then
        fault(c, "limit", path(c, par, lt, lv), bit, "more than " .. istr(c.L.lim.fields) .. " fields in one packet")
        return nil
    end
    local i = #c.f + 1
    c.f[i] = { nd, lt, lv, kind, par, dep, bit, len, raw, v, vt, c.zone }
    return i
end

local function close(c, g, v, vt)
    local f = c.f[g]
    if f then
        f[8] = c.pos - f[7]
        if v ~= nil then
            f[10], f[11] = v, vt
        end
    end
end

local function write_slot(c, s, v)
    if s == nil then
        return
    end
    if s < 8 then
        c.seen[s] = true
    end
    c.sl[s] = slotval(v)
end

local function role(c, s)
    if c.seen[s] then
        return c.sl[s] or 0
    end
    return nil
end

local function evaluate(c, e, parent, lt, lv, at)
    local left = c.n - at
    if left < 0 then
        left = 0
    end
    local v = eval(c.L.E[e], c.sl, c.L.remaining and left or 0)
    if v == false then
        fault(c, "expression", path(c, parent, lt, lv), at, "division by zero in the field's expression")
        return nil
    end
    return v
end

local function int_width(lo, hi)
    local span = hi - lo
    local w = 0
    while span >= 1 and w < 33 do
        span = floor(span / 2)
        w = w + 1
    end
    return w
end

-- `bits` as the articles read them (LSB first); false past the end.
local function bits(c, n, parent, lt, lv)
    if c.pos + n > c.n then
        return past_end(c, parent, lt, lv, c.pos, n)
    end
    local v = lsb(c.s, c.pos, n)
    c.pos = c.pos + n
    return v
end

local block, node_of, relative_list, read_messages

local function align(c, nd, parent, depth)
    local pad = (8 - c.pos % 8) % 8
    if pad == 0 then
        return true
    end
    local at = c.pos
    local v
    if c.L.msb then
        v = msb(c.s, at, pad)
    else
        v = lsb(c.s, at, pad)
    end
    if v ~= 0 then
        return fault(c, "nonzero_padding", path(c, parent, PART, "align"), at,
            "non-zero padding 0x" .. sfmt("%x", v) .. " in " .. pad .. " pad bits")
    end
    c.pos = at + pad
    return push(c, nd, PART, "align", "align", parent, depth, at, pad, 0, 0, "u") ~= nil
end

-- The count of an array, bytes or le-uint: a constant or an expression's value.
local function count(c, cnt, parent, nd, at)
    if cnt.c then
        return cnt.c
    end
    local v = evaluate(c, cnt.e, parent, NODE, nd, at)
    if v == nil then
        return nil
    end
    return count_of(v)
end

-- One-field leaves read LSB first: value, raw and value type from the bits read.
local function cf_value(cf, i)
    local fi, fm = fround(i), fround(cf.maxint)
    local q = fround(fi / fm)
    return fround(fround(q * cf.delta) + cf.min)
end

local S3 = fround(0.70710678118654752440)
local S3D = fround(S3 + S3)
local function s3_component(i, b)
    local scale = POW[b] - 1
    return fround(fround(fround(i / scale) * S3D) - S3)
end

local function s3_decode(largest, a, b, cc)
    local t = fround(1 - fround(a * a))
    t = fround(t - fround(b * b))
    t = fround(t - fround(cc * cc))
    if t < 0 then
        t = 0
    end
    local big = fround(sqrt(t))
    local l = largest % 4
    if l == 0 then
        return { big, a, b, cc }
    elseif l == 1 then
        return { a, big, b, cc }
    elseif l == 2 then
        return { a, b, big, cc }
    end
    return { a, b, cc, big }
end

local XYZW = { "x", "y", "z", "w" }
local SMALLEST = { { "y", "z", "w" }, { "x", "z", "w" }, { "x", "y", "w" }, { "x", "y", "z" } }

-- A leaf of the articles' packing (bits, bool, int, uint64, float, double, compressed
-- floats and vectors, quaternions, smallest-three, check): its fields, or a fault at the
-- part that failed, with the parts read before it recorded.
local function leaf(c, nd, node, lt, lv, parent, depth)
    local k = node.kind
    local start = c.pos
    local avail = function()
        return c.n - c.pos
    end
    if k == "bits" or k == "bool" or k == "float" then
        local w = k == "bits" and node.w or (k == "bool" and 1 or 32)
        if avail() < w then
            return past_end(c, parent, lt, lv, start, w)
        end
        local v = lsb(c.s, start, w)
        c.pos = start + w
        local value, vt = v, "u"
        if k == "bool" then
            value, vt = v ~= 0, "b"
        elseif k == "float" then
            value, vt = f32bits(v), "f"
        end
        if not push(c, nd, lt, lv, k, parent, depth, start, w, v, value, vt) then
            return false
        end
        write_slot(c, node.slot, v)
        return true
    elseif k == "int" then
        local w = node.w
        if avail() < w then
            return past_end(c, parent, lt, lv, start, w)
        end
        local raw = lsb(c.s, start, w)
        local v = node.min + raw
        c.pos = start + w
        if not push(c, nd, lt, lv, "int", parent, depth, start, w, raw, v, "i") then
            return false
        end
        if v > node.max then
            return out_of_range(c, parent, lt, lv, start, v, node.min, node.max)
        end
        write_slot(c, node.slot, v)
        return true
    elseif k == "uint64" or k == "double" then
        if avail() < 32 then
            return past_end(c, parent, lt, lv, start, 32)
        end
        local lo = lsb(c.s, start, 32)
        c.pos = start + 32
        if avail() < 32 then
            return past_end(c, parent, lt, lv, c.pos, 32)
        end
        local hi = lsb(c.s, c.pos, 32)
        c.pos = c.pos + 32
        local raw = wide(lo, hi, false)
        local value, vt = raw, "u"
        if k == "double" then
            value, vt = f64bits(lo, hi), "d"
        end
        if not push(c, nd, lt, lv, k, parent, depth, start, 64, raw, value, vt) then
            return false
        end
        write_slot(c, node.slot, wide(lo, hi, true))
        return true
    elseif k == "compressed-float" then
        local cf = node.cf
        if avail() < cf.bits then
            return past_end(c, parent, lt, lv, start, cf.bits)
        end
        local i = lsb(c.s, start, cf.bits)
        c.pos = start + cf.bits
        if not push(c, nd, lt, lv, k, parent, depth, start, cf.bits, i, cf_value(cf, i), "f") then
            return false
        end
        if i > cf.maxint then
            return out_of_range(c, parent, lt, lv, start, i, 0, cf.maxint)
        end
        write_slot(c, node.slot, i)
        return true
    elseif k == "check" then
        local pad = (8 - c.pos % 8) % 8
        if pad > 0 then
            if avail() < pad then
                return past_end(c, parent, lt, lv, start, pad)
            end
            local v = lsb(c.s, start, pad)
            if v ~= 0 then
                return fault(c, "nonzero_padding", path(c, parent, PART, "align"), start,
                    "non-zero padding 0x" .. sfmt("%x", v) .. " in " .. pad .. " pad bits")
            end
            c.pos = start + pad
            if not push(c, nd, PART, "align", "align", parent, depth, start, pad, 0, 0, "u") then
                return false
            end
        end
        local at = c.pos
        if avail() < 32 then
            return past_end(c, parent, lt, lv, at, 32)
        end
        local got = lsb(c.s, at, 32)
        c.pos = at + 32
        if not push(c, nd, lt, lv, "check", parent, depth, at, 32, got, got, "u") then
            return false
        end
        if got ~= node.magic then
            return fault(c, "check", path(c, parent, lt, lv), at,
                sfmt("check failed: expected 0x%08x, got 0x%08x", node.magic, got))
        end
        write_slot(c, node.slot, node.magic)
        return true
    end
    -- A group of parts: vector, compressed vector, quaternion, smallest-three.
    local widths, n, ckind
    if k == "vector" then
        widths, n, ckind = { 32, 32, 32 }, 3, "float"
    elseif k == "quaternion" then
        widths, n, ckind = { 32, 32, 32, 32 }, 4, "float"
    elseif k == "compressed-vector" then
        local b = node.cf.bits
        widths, n, ckind = { b, b, b }, 3, "compressed-float"
    else
        widths, n, ckind = { 2, node.w, node.w, node.w }, 4, "bits"
    end
    local g = push(c, nd, lt, lv, k, parent, depth, start, 0, 0, nil, nil)
    if not g then
        return false
    end
    local floats = { 0, 0, 0, 0 }
    local largest = 0
    local first_raw
    local failed
    for p = 1, n do
        local w = widths[p]
        local at = c.pos
        local name
        if k == "smallest-three" then
            name = p == 1 and "largest" or SMALLEST[largest % 4 + 1][p - 1]
        else
            name = XYZW[p]
        end
        if avail() < w then
            failed = function()
                return past_end(c, g, PART, name, at, w)
            end
            break
        end
        local v = lsb(c.s, at, w)
        c.pos = at + w
        if p == 1 then
            first_raw = v
        end
        local value, vt, pk = nil, "f", ckind
        if k == "vector" or k == "quaternion" then
            value = f32bits(v)
            floats[p] = value
        elseif k == "compressed-vector" then
            value = cf_value(node.cf, v)
            floats[p] = value
        elseif p == 1 then
            largest, value, vt = v, v, "u"
        else
            value = s3_component(v, node.w)
            floats[p - 1] = value
        end
        if not push(c, nd, PART, name, pk, g, depth + 1, at, w, v, value, vt) then
            return false
        end
        if k == "compressed-vector" and v > node.cf.maxint then
            failed = function()
                return out_of_range(c, g, PART, name, at, v, 0, node.cf.maxint)
            end
            break
        end
    end
    local gv, gt
    if k == "vector" or k == "compressed-vector" then
        gv, gt = { floats[1], floats[2], floats[3] }, "3"
    elseif k == "quaternion" then
        gv, gt = { floats[1], floats[2], floats[3], floats[4] }, "4"
    else
        gv, gt = s3_decode(largest, floats[1], floats[2], floats[3]), "4"
    end
    close(c, g, gv, gt)
    if failed then
        return failed()
    end
    write_slot(c, node.slot, first_raw or 0)
    return true
end

-- An Int64 or UInt64 as a wide value (or a number when it is one exactly).
local function to_wide(x)
    if type(x) == "number" then
        return x
    end
    local u = UInt64(x)
    return wide(u:lower(), u:higher(), true)
end

-- The bytes of a value read whole-byte: (lo, hi) of `n` bytes from byte `b`.
local function byte_halves(s, b, n, big)
    local lo, hi = 0, 0
    for i = 0, n - 1 do
        local x = sbyte(s, b + i + 1) or 0
        local k = big and (n - 1 - i) or i
        if k < 4 then
            lo = lo + x * POW[8 * k]
        else
            hi = hi + x * POW[8 * (k - 4)]
        end
    end
    return lo, hi
end

local function node_read(c, nd, parent, depth)
    local L = c.L
    local node = L.N[nd]
    local k = node.kind
    if k == "align" then
        return align(c, nd, parent, depth)
    elseif k == "magic" then
        -- Whole bytes after `align`, compared whole (crates/dissect/src/exec/words.rs, `magic`).
        if not align(c, nd, parent, depth) then
            return false
        end
        local at, n = c.pos, #node.bytes
        if n * 8 > c.n - at then
            return past_end(c, parent, NODE, nd, at, n * 8)
        end
        c.pos = at + n * 8
        if not push(c, nd, NODE, nd, "check", parent, depth, at, n * 8, 0, { at / 8, n }, "y") then
            return false
        end
        local got = ssub(c.s, at / 8 + 1, at / 8 + n)
        if got ~= node.bytes then
            local function hex(b)
                return (b:gsub(".", function(x)
                    return sfmt("%02x", sbyte(x))
                end))
            end
            return fault(c, "check", path(c, parent, NODE, nd), at,
                "the magic is " .. hex(got) .. ", not " .. hex(node.bytes))
        end
        return true
    elseif k == "bytes" or k == "text" then
        local n = count(c, node.count, parent, nd, c.pos)
        if n == nil or not align(c, nd, parent, depth) then
            return false
        end
        local at = c.pos
        if n * 8 > c.n - at then
            return past_end(c, parent, NODE, nd, at, n * 8)
        end
        c.pos = at + n * 8
        return push(c, nd, NODE, nd, k, parent, depth, at, n * 8, 0, { at / 8, n }, "y") ~= nil
    elseif k == "string" then
        local h = c.pos
        local g = push(c, nd, NODE, nd, "string", parent, depth, h, 0, 0, nil, nil)
        if not g then
            return false
        end
        local top = node.max - 1
        local w = int_width(0, top)
        local len = bits(c, w, g, PART, "length")
        if not len then
            return false
        end
        if not push(c, nd, PART, "length", "int", g, depth + 1, h, w, len, len, "i") then
            return false
        end
        if len > top then
            return out_of_range(c, g, PART, "length", h, len, 0, top)
        end
        if not align(c, nd, g, depth + 1) then
            return false
        end
        local at = c.pos
        if len * 8 > c.n - at then
            return past_end(c, g, PART, "data", at, len * 8)
        end
        c.pos = at + len * 8
        local v = { at / 8, len }
        if not push(c, nd, PART, "data", "bytes", g, depth + 1, at, len * 8, 0, v, "y") then
            return false
        end
        close(c, g, v, "y")
        return true
    elseif k == "rest" then
        if not align(c, nd, parent, depth) then
            return false
        end
        local at = c.pos
        local len = floor((c.n - at) / 8)
        c.pos = at + len * 8
        c.rest = { at / 8, len, 0 }
        local i = push(c, nd, NODE, nd, "rest", parent, depth, at, len * 8, 0, { at / 8, len }, "y")
        if not i then
            return false
        end
        if #L.B[node.body] > 0 then
            local outer = c.pos
            c.pos = at
            if not block(c, node.body, i, depth + 1) then
                return false
            end
            c.rest = { at / 8, len, math.ceil((c.pos - at) / 8) }
            c.pos = outer
        end
        return true
    elseif k == "le-uint" then
        local h = c.pos
        local n = count(c, node.count, parent, nd, h)
        if n == nil then
            return false
        end
        if n < 1 or n > 8 then
            return fault(c, "out_of_range", path(c, parent, NODE, nd), h,
                "le-uint of " .. istr(n) .. " bytes: 1 to 8 are allowed")
        end
        local lo, hi = 0, 0
        for i = 0, n - 1 do
            local b = bits(c, 8, parent, NODE, nd)
            if not b then
                return false
            end
            if i < 4 then
                lo = lo + b * POW[8 * i]
            else
                hi = hi + b * POW[8 * (i - 4)]
            end
        end
        write_slot(c, node.slot, wide(lo, hi, true))
        local v = wide(lo, hi, false)
        return push(c, nd, NODE, nd, "le-uint", parent, depth, h, n * 8, v, v, "u") ~= nil
    elseif k == "msb" then
        local m = node.m
        local w, at = m.w, c.pos
        if c.n - at < w then
            return past_end(c, parent, NODE, nd, at, w)
        end
        local raw, value, vt, slot
        if w > 32 then
            local hi, lo = msb(c.s, at, 32), msb(c.s, at + 32, 32)
            raw = wide(lo, hi, false)
            slot = wide(lo, hi, true)
            if m.t == "double" then
                value, vt = f64bits(lo, hi), "d"
            else
                value, vt = raw, "u"
            end
        else
            raw = msb(c.s, at, w)
            slot, value, vt = raw, raw, "u"
            if m.t == "bool" then
                value, vt = raw ~= 0, "b"
            elseif m.t == "float" then
                value, vt = f32bits(raw), "f"
            elseif m.t == "int" then
                value, vt = m.min + raw, "i"
                if value > m.max then
                    return out_of_range(c, parent, NODE, nd, at, value, m.min, m.max)
                end
                slot = value
            end
        end
        c.pos = at + w
        write_slot(c, node.slot, slot)
        return push(c, nd, NODE, nd, m.t, parent, depth, at, w, raw, value, vt) ~= nil
    elseif k == "byteint" then
        local n = count(c, node.count, parent, nd, c.pos)
        if n == nil or not align(c, nd, parent, depth) then
            return false
        end
        local at = c.pos
        local name = node.word
        if n < 1 or n > 8 then
            return fault(c, "out_of_range", path(c, parent, NODE, nd), at,
                name .. " of " .. istr(n) .. " bytes: 1 to 8 are allowed")
        end
        if n * 8 > c.n - at then
            return past_end(c, parent, NODE, nd, at, n * 8)
        end
        local lo, hi = byte_halves(c.s, at / 8, n, node.big)
        local raw = wide(lo, hi, false)
        local value, vt = raw, "u"
        if node.signed then
            local top = n * 8
            if top <= 32 then
                if lo >= POW[top - 1] then
                    value = lo - POW[top]
                else
                    value = lo
                end
            else
                local hb = top - 32
                if hi >= POW[hb - 1] then
                    hi = hi + (P32 - POW[hb])
                end
                value = wide(lo, hi, true)
            end
            vt = "i"
        end
        c.pos = at + n * 8
        write_slot(c, node.slot, node.signed and value or wide(lo, hi, true))
        return push(c, nd, NODE, nd, name, parent, depth, at, n * 8, raw, value, vt) ~= nil
    elseif k == "varint" or k == "zigzag" then
        if not align(c, nd, parent, depth) then
            return false
        end
        local at = c.pos
        local b0 = at / 8
        local lo, hi, len = 0, 0, nil
        for i = 0, 9 do
            local b = sbyte(c.s, b0 + i + 1)
            if b == nil or (b0 + i) * 8 >= c.n then
                local avail = math.ceil((c.n - at) / 8) + 1
                return past_end(c, parent, NODE, nd, at, avail * 8)
            end
            if i == 9 and b > 1 then
                return fault(c, "out_of_range", path(c, parent, NODE, nd), at, "varint longer than 10 bytes or over 64 bits")
            end
            local g, s = b % 128, 7 * i
            if s >= 32 then
                hi = hi + g * POW[s - 32]
            elseif s + 7 <= 32 then
                lo = lo + g * POW[s]
            else
                local keep = 32 - s
                lo = lo + (g % POW[keep]) * POW[s]
                hi = hi + floor(g / POW[keep])
            end
            if b < 128 then
                len = i + 1
                break
            end
        end
        if not len then
            return fault(c, "out_of_range", path(c, parent, NODE, nd), at, "varint longer than 10 bytes or over 64 bits")
        end
        local raw = wide(lo, hi, false)
        local value, vt, slot = raw, "u", wide(lo, hi, true)
        if k == "zigzag" then
            local odd = lo % 2 == 1
            local l2, h2 = floor(lo / 2) + (hi % 2) * POW[31], floor(hi / 2)
            if odd then
                l2, h2 = P32 - 1 - l2, P32 - 1 - h2
            end
            value, vt = wide(l2, h2, true), "i"
            slot = value
        end
        c.pos = at + len * 8
        write_slot(c, node.slot, slot)
        return push(c, nd, NODE, nd, k, parent, depth, at, len * 8, raw, value, vt) ~= nil
    elseif k == "cstring" then
        if not align(c, nd, parent, depth) then
            return false
        end
        local at = c.pos
        local b0 = at / 8
        local rest = floor(c.n / 8) - b0
        local window = rest < node.max and rest or node.max
        local nul
        if window > 0 then
            nul = string.find(c.s, "\0", b0 + 1, true)
            if nul and nul - (b0 + 1) >= window then
                nul = nil
            end
        end
        if not nul then
            if rest < node.max then
                return fault(c, "past_end", path(c, parent, NODE, nd), at,
                    "no NUL before the end of the datagram (" .. istr(rest) .. " bytes)")
            end
            return fault(c, "out_of_range", path(c, parent, NODE, nd), at, "no NUL in the first " .. istr(node.max) .. " bytes")
        end
        local len = nul - (b0 + 1)
        c.pos = at + (len + 1) * 8
        return push(c, nd, NODE, nd, "cstring", parent, depth, at, (len + 1) * 8, 0, { b0, len }, "y") ~= nil
    elseif k == "derived" then
        local at = c.pos
        local v = evaluate(c, node.e, parent, NODE, nd, at)
        if v == nil then
            return false
        end
        write_slot(c, node.slot, v)
        local w = to_wide(v)
        return push(c, nd, NODE, nd, "derived", parent, depth, at, 0, w, w, "i") ~= nil
    elseif k == "struct" then
        local g = push(c, nd, NODE, nd, "struct", parent, depth, c.pos, 0, 0, nil, nil)
        if not g or not block(c, node.body, g, depth + 1) then
            return false
        end
        close(c, g)
        return true
    elseif k == "inline" then
        return block(c, node.body, parent, depth)
    elseif k == "array" then
        local h = c.pos
        local n = count(c, node.count, parent, nd, h)
        if n == nil then
            return false
        end
        local g = push(c, nd, NODE, nd, "array", parent, depth, h, 0, 0, n, "u")
        if not g then
            return false
        end
        if n > L.lim.elements then
            return fault(c, "limit", path(c, parent, NODE, nd), h,
                "array of " .. istr(n) .. " elements (limit " .. istr(L.lim.elements) .. ")")
        end
        for i = 0, n - 1 do
            local e = push(c, nd, INDEX, i, "element", g, depth + 1, c.pos, 0, 0, nil, nil)
            if not e or not block(c, node.body, e, depth + 2) then
                return false
            end
            close(c, e)
        end
        close(c, g)
        return true
    elseif k == "list" then
        local g = push(c, nd, NODE, nd, "list", parent, depth, c.pos, 0, 0, nil, nil)
        if not g then
            return false
        end
        local ids = L.B[node.body]
        local i = 0
        while true do
            if i >= L.lim.elements then
                return fault(c, "limit", path(c, parent, NODE, nd), c.pos,
                    "list longer than " .. istr(L.lim.elements) .. " elements")
            end
            local eat = c.pos
            local e = push(c, nd, INDEX, i, "element", g, depth + 1, eat, 0, 0, nil, nil)
            if not e then
                return false
            end
            if #ids == 0 then
                break
            end
            if not node_of(c, ids[1], e, depth + 2) then
                return false
            end
            local v = evaluate(c, node.e, e, INDEX, i, c.pos)
            if v == nil then
                return false
            end
            local done = truthy(v)
            if not done then
                for j = 2, #ids do
                    if not node_of(c, ids[j], e, depth + 2) then
                        return false
                    end
                end
            end
            close(c, e)
            if done then
                break
            end
            if c.pos == eat then
                return fault(c, "limit", path(c, g, INDEX, i), eat, "list element consumed no bits")
            end
            i = i + 1
        end
        close(c, g, i, "u")
        return true
    elseif k == "relative-list" then
        return relative_list(c, nd, node, parent, depth)
    elseif k == "if" then
        local v = evaluate(c, node.e, parent, NODE, nd, c.pos)
        if v == nil then
            return false
        end
        if truthy(v) then
            return block(c, node.body, parent, depth)
        end
        return block(c, node.other, parent, depth)
    elseif k == "messages" then
        -- A datagram kind's messages, read where its body says.
        if not L.kinds then
            return fault(c, "limit", path(c, parent, NODE, nd), c.pos, "messages inside a block")
        end
        local zone = c.zone
        c.zone = "m"
        local ok = read_messages(c, nd)
        c.zone = zone
        return ok
    end
    return leaf(c, nd, node, NODE, nd, parent, depth)
end

-- The relative index ladder of `relative-list`: its flags and difference under `index`.
local RUNGS = { { 2, 5, "upto_5" }, { 6, 13, "upto_13" }, { 14, 29, "upto_29" }, { 30, 61, "upto_61" }, { 62, 125, "upto_125" } }

local function flag(c, nd, parent, depth, name)
    local at = c.pos
    local v = bits(c, 1, parent, PART, name)
    if not v then
        return nil
    end
    if not push(c, nd, PART, name, "bool", parent, depth, at, 1, v, v ~= 0, "b") then
        return nil
    end
    return v ~= 0
end

local function relative_index(c, nd, parent, depth, previous, max)
    local at = c.pos
    local g = push(c, nd, PART, "index", "relative-index", parent, depth, at, 0, 0, nil, nil)
    if not g then
        return nil
    end
    local diff
    local plus = flag(c, nd, g, depth + 1, "plus_one")
    if plus == nil then
        return nil
    end
    if plus then
        diff = 1
    else
        local lo, hi = 126, max + 1
        for k = 1, #RUNGS do
            local here = flag(c, nd, g, depth + 1, RUNGS[k][3])
            if here == nil then
                return nil
            end
            if here then
                lo, hi = RUNGS[k][1], RUNGS[k][2]
                break
            end
        end
        local dat = c.pos
        local w = int_width(lo, hi)
        local raw = bits(c, w, g, PART, "difference")
        if not raw then
            return nil
        end
        local d = lo + raw
        if not push(c, nd, PART, "difference", "int", g, depth + 1, dat, w, raw, d, "i") then
            return nil
        end
        if d > hi then
            out_of_range(c, g, PART, "difference", dat, d, lo, hi)
            return nil
        end
        diff = d
    end
    local index = previous + diff
    close(c, g, index, "i")
    if index > max then
        out_of_range(c, parent, PART, "index", at, index, previous + 1, max)
        return nil
    end
    return index
end

relative_list = function(c, nd, node, parent, depth)
    local L = c.L
    local g = push(c, nd, NODE, nd, "relative-list", parent, depth, c.pos, 0, 0, nil, nil)
    if not g then
        return false
    end
    local previous, i = -1, 0
    while true do
        if i > L.lim.elements then
            return fault(c, "limit", path(c, parent, NODE, nd), c.pos, "more than " .. istr(L.lim.elements) .. " objects")
        end
        local e = push(c, nd, INDEX, i, "element", g, depth + 1, c.pos, 0, 0, nil, nil)
        if not e then
            return false
        end
        local index = relative_index(c, nd, e, depth + 2, previous, node.max)
        if index == nil then
            return false
        end
        previous = index
        if index == node.max then
            -- The sentinel is not an element: the list's `end`.
            local f = c.f[e]
            f[2], f[3], f[4] = PART, "end", "sentinel"
            close(c, e, index, "i")
            break
        end
        if not block(c, node.body, e, depth + 2) then
            return false
        end
        close(c, e)
        i = i + 1
    end
    close(c, g, i, "u")
    return true
end

-- How messages of type `ty` carry a fragment: their own, else the messages block's (any type).
local function msgfrag_of(L, ty)
    return L.msgfrag[ty] or L.msgfrag[4294967295]
end

-- A value that is not zero (a wide one is a table or userdata: not zero unless both halves are).
local function nonzero(v)
    if v == nil then
        return false
    end
    if type(v) == "number" then
        return v ~= 0
    end
    local lo, hi = halves(type(v) == "userdata" and { lo = v:lower(), hi = v:higher() } or v)
    return lo ~= 0 or hi ~= 0
end

-- A count-down or flagged fragment's data was read: what it says of its message; its
-- place in the stream is taken when the message is read whole (crates/dissect/src/exec/fragments.rs).
local function run_fragment(c, m, def, nd, parent, start, len)
    local r = def.rem and (c.sl[def.rem] or 0)
    local bad = r ~= nil and (type(r) ~= "number" or r < 0 or r >= P32)
    local first, last
    if r ~= nil and not bad then
        first, last = false, r == 0
    else
        first = def.first ~= nil and nonzero(c.sl[def.first] or 0)
        last = def.last ~= nil and nonzero(c.sl[def.last] or 0)
    end
    m.frag = {
        run = { rem = (not bad) and r or nil, first = first, last = last },
        at = floor(start / 8),
        len = floor(len / 8),
    }
    if bad then
        return fault(c, "out_of_range", path(c, parent, NODE, nd), start, "a fragment's remaining count is 32-bit")
    end
    return true
end

-- A message's sequence field of a stream was read: the message's first stream places
-- its count-down or flagged fragment (crates/dissect/src/exec/words.rs, `stream_seq`).
local function stream_seq(c, node)
    local m = c.msgs[#c.msgs]
    local sd = c.L.streams[node.stream]
    if not m or m.stream or not sd or not node.slot then
        return
    end
    local key = {}
    for i, s in ipairs(sd.key) do
        local v = c.sl[s] or 0
        key[i] = istr(type(v) == "number" and v or to_wide(v))
    end
    local v = c.sl[node.slot] or 0
    -- The sequence modulo its width (an i64 seen as a u64, then wrapped); the generator
    -- refuses a stream wider than 52 bits where fragments are placed.
    local seq = type(v) == "number" and v % 2 ^ sd.bits or low32(v) % 2 ^ math.min(sd.bits, 32)
    m.stream = { si = node.stream, key = tconcat(key, ","), seq = seq, bits = sd.bits }
end

-- A message's fragment data was read: its fragment, and the faults no reassembly mends.
local function message_fragment(c, nd, parent, start, len)
    local L = c.L
    local m = c.msgs[#c.msgs]
    -- In the messages block the message's type is not read yet: its roles are any type's.
    local ty = m and (m.ty or 4294967295)
    local def = ty and msgfrag_of(L, ty)
    if not def then
        return true
    end
    if def.rem or def.first then
        return run_fragment(c, m, def, nd, parent, start, len)
    end
    local key = { 0, 0, 0 }
    for i, s in ipairs(def.key) do
        key[i] = c.sl[s] or 0
    end
    local function word(v)
        if type(v) ~= "number" or v < 0 or v >= P32 then
            return nil
        end
        return v
    end
    local number, cnt = role(c, 3) or 0, role(c, 4) or 0
    local offset = def.off and (c.sl[def.off] or 0)
    local total = def.tot and (c.sl[def.tot] or 0)
    local bytes = floor(len / 8)
    local why
    if not word(number) or not word(cnt) or (offset and not word(offset)) or (total and not word(total)) then
        why = "a fragment's number, count, offset and total are 32-bit"
    elseif total and total > L.maxmsg then
        why = "the message's total length " .. istr(total) .. " is over max-message-size " .. istr(L.maxmsg)
    elseif offset and total and offset + bytes > total then
        why = "fragment data at byte offset " .. istr(offset) .. " (" .. istr(bytes) ..
            " bytes) runs past the message's total length " .. istr(total)
    end
    local keytext = {}
    for i = 1, 3 do
        keytext[i] = istr(type(key[i]) == "number" and key[i] or to_wide(key[i]))
    end
    m.frag = {
        key = tconcat(keytext, ","),
        id = word(number) or P32 - 1,
        count = word(cnt) or P32 - 1,
        offset = offset and (word(offset) or P32 - 1),
        total = total and (word(total) or P32 - 1),
        at = floor(start / 8),
        len = bytes,
    }
    if why then
        return fault(c, "out_of_range", path(c, parent, NODE, nd), start, why)
    end
    return true
end

node_of = function(c, nd, parent, depth)
    local L = c.L
    if not L.tracks then
        return node_read(c, nd, parent, depth)
    end
    local node = L.N[nd]
    local start = c.pos
    if not node_read(c, nd, parent, depth) then
        return false
    end
    local len = c.pos - start
    if node.role == "crc" then
        c.crc_at = start
    end
    if node.role == "sequence" and node.stream and #c.msgs > 0 then
        stream_seq(c, node)
    end
    if node.role == "fragment-data" and #c.msgs > 0 then
        if not message_fragment(c, nd, parent, start, len) then
            return false
        end
    end
    if node.remember and start % 8 == 0 and len % 8 == 0 and len <= 64 then
        c.learnt[#c.learnt + 1] = { node.remember, start, len }
    end
    return true
end

block = function(c, b, parent, depth)
    local ids = c.L.B[b]
    for i = 1, #ids do
        if not node_of(c, ids[i], parent, depth) then
            return false
        end
    end
    return true
end

-- Messages ------------------------------------------------------------------------------

local function message(c, nd, header, group, i)
    local L = c.L
    local start = c.pos
    local e = push(c, nd, INDEX, i, "message", group, 1, start, 0, 0, nil, nil)
    if not e then
        return false
    end
    c.seen[2] = nil
    local m = { bit = start }
    c.msgs[#c.msgs + 1] = m
    local ok = block(c, header, e, 2)
    if ok then
        -- Message types follow the datagram kinds (`L.mbase`); a message whose header has
        -- no type field has no body but type 0's (crates/dissect/src/exec/words.rs).
        local typed = role(c, 2) ~= nil
        local ty = low32(role(c, 2) or 0)
        local base = L.mbase or 0
        m.ty = ty + base
        local def = L.packets[ty + base]
        if def and L.kinds and not def.message then
            def = nil
        end
        local zero = L.packets[base]
        if not typed and not (zero and zero.message) then
            def = false
        end
        if def then
            ok = block(c, def.body, e, 2)
        elseif def == false then
            ok = true
        else
            ok = fault(c, "unknown_type", path(c, e, PART, "type"), c.pos, "no message is defined for type " .. istr(ty))
        end
    end
    m.len = c.pos - start
    -- A count-down or flagged fragment takes its place in the message's first stream;
    -- without one it is not placed, and not reassembled.
    if m.frag and m.frag.run then
        if m.stream then
            m.frag.run.si, m.frag.run.key, m.frag.run.seq = m.stream.si, m.stream.key, m.stream.seq
            m.frag.run.bits = m.stream.bits
        else
            m.frag = nil
        end
    end
    close(c, e)
    return ok
end

local function messages(c, nd)
    local L = c.L
    local header = L.N[nd].body
    local at = c.pos
    local group = push(c, nd, NODE, nd, "messages", ROOT, 0, at, 0, 0, nil, nil)
    if not group then
        return false
    end
    local cnt, stop = huge, c.n
    if L.mend then
        local which = L.mend[1]
        local v = evaluate(c, L.mend[2], group, PART, which, at)
        if v == nil then
            return false
        end
        local n = count_of(v)
        if which == "count" then
            cnt = n
        else
            local left = floor((c.n - c.pos) / 8)
            if n > left then
                return fault(c, "past_end", path(c, group, PART, "length"), at,
                    "the messages' length " .. istr(n) .. " runs past the datagram (" .. istr(left) .. " bytes left)")
            end
            stop = at + n * 8
        end
    end
    local i, ok = 0, true
    while true do
        if i >= cnt or c.pos + 8 > stop then
            if L.mend then
                if i < cnt and cnt ~= huge then
                    ok = fault(c, "past_end", path(c, group, INDEX, i), c.pos,
                        "the datagram ended after " .. istr(i) .. " of " .. istr(cnt) .. " messages")
                elseif c.n - c.pos >= 8 then
                    ok = fault(c, "trailing_bytes", path(c, group, INDEX, i), c.pos,
                        istr(floor((c.n - c.pos) / 8)) .. " bytes after the messages")
                end
            end
            break
        end
        if i >= L.lim.elements then
            ok = fault(c, "limit", path(c, group, INDEX, i), c.pos,
                "more than " .. istr(L.lim.elements) .. " messages in one datagram")
            break
        end
        ok = message(c, nd, header, group, i)
        i = i + 1
        if not ok then
            break
        end
        if c.pos > stop then
            ok = fault(c, "out_of_range", path(c, group, INDEX, i - 1), c.pos,
                "message " .. istr(i - 1) .. " runs past the messages' length")
            break
        end
    end
    close(c, group, i, "u")
    return ok
end
read_messages = messages

-- A datagram ----------------------------------------------------------------------------

local function hex_id(lo, hi, width)
    if width == 8 then
        return sfmt("0x%08X%08X", hi, lo)
    end
    return sfmt("0x%08X", lo)
end

local function protocol_id(c, d)
    local L = c.L
    local v = role(c, 7)
    if v == nil or not L.id then
        return true
    end
    local lo, hi = halves(to_wide(v))
    -- An encrypted layer (netcode.io) takes the id its first connection request carries
    -- when it is not the definition's, as gpcap does: the id is sealed into every
    -- packet, in the clear only in requests.
    if L.encrypted and not L.id_settled then
        L.id_settled = true
        L.id[2], L.id[3] = lo, hi
    end
    if lo == L.id[2] and hi == L.id[3] then
        return true
    end
    local field, bit = "protocol id", 0
    for i = 1, #c.f do
        local f = c.f[i]
        if f[2] == NODE and L.N[f[3]] and L.N[f[3]].role == "protocol-id" then
            field, bit = path(c, f[5], f[2], f[3]), f[7]
            break
        end
    end
    local shown = hi > 0 and sfmt("%X%08X", hi, lo) or sfmt("%X", lo)
    return fault(c, "check", field, bit, "protocol id 0x" .. shown .. " is not the definition's " .. hex_id(L.id[2], L.id[3], L.id[1]))
end

local function acks(c, d)
    local a, b = role(c, 5), role(c, 6)
    d.ack = a and low32(a) % 65536
    d.ack_bits = b and low32(b)
end

local function body(c, d, ty)
    local L = c.L
    local def = L.packets[ty]
    if not def then
        local at, name = 0, "type"
        for i = 1, #c.f do
            local f = c.f[i]
            if f[2] == NODE and L.N[f[3]] and L.N[f[3]].role == "type" then
                at = f[7]
                break
            end
        end
        if L.type_node then
            name = L.type_node
        end
        return fault(c, "unknown_type", name, at, "no packet is defined for type " .. istr(ty))
    end
    if not block(c, def.body, ROOT, 0) then
        return false
    end
    if L.end_check then
        c.zone = "e"
        if not leaf(c, -1, { kind = "check", magic = L.end_check }, PART, "end_check", ROOT, 0) then
            return false
        end
    end
    if c.n - c.pos >= 8 then
        local n = floor((c.n - c.pos) / 8)
        return fault(c, "trailing_bytes", "end_check", math.ceil(c.pos / 8) * 8,
            istr(n) .. " trailing bytes after the end of the packet")
    end
    return true
end

local function reading(L, s)
    return {
        L = L, s = s, n = #s * 8, pos = 0, sl = {}, seen = {}, count = 0, f = {},
        msgs = {}, learnt = {}, zone = "h",
    }
end

-- Reads datagram `s` of layer `L`: the dissection `d` (fields, fault, roles).
local function dissect(L, s)
    local c = reading(L, s)
    local d = { c = c }
    local function finish()
        d.f, d.fault, d.msgs, d.learnt, d.crc_at = c.f, c.fault, c.msgs, c.learnt, c.crc_at
        return d
    end
    if not block(c, L.header, ROOT, 0) then
        return finish()
    end
    d.crc = role(c, 0)
    if L.rule and L.rule.stand_in then
        if L.rule.when then
            local v = evaluate(c, L.rule.when, ROOT, PART, "stand-in-when", c.pos)
            if v == nil then
                return finish()
            end
            d.stand_in = truthy(v)
        else
            d.stand_in = true
        end
    end
    d.seq = role(c, 1)
    local ty = low32(role(c, 2) or 0)
    d.ptype = ty
    if L.messages and not L.kinds then
        d.ptype = L.dtype
        c.zone = "m"
        local ok = messages(c, L.messages)
        acks(c, d)
        if ok then
            protocol_id(c, d)
        end
        return finish()
    end
    local frag = false
    if L.fragment then
        if L.fwhen then
            local v = evaluate(c, L.fwhen, ROOT, PART, "fragment", c.pos)
            if v == nil then
                return finish()
            end
            frag = truthy(v)
        else
            frag = ty == 0
        end
    end
    if frag then
        d.ptype = L.ftype
        c.zone = "f"
        local ok = block(c, L.fragment, ROOT, 0)
        acks(c, d)
        if ok then
            local raw = low32(role(c, 4) or 0)
            local cnt = L.cm1 and (raw + 1) % P32 or raw
            local data = c.rest or { floor(c.pos / 8), 0, 0 }
            d.frag = { id = low32(role(c, 3) or 0), count = cnt, off = data[1], len = data[2], lead = data[3] }
        end
        return finish()
    end
    c.zone = "b"
    local ok = body(c, d, ty)
    -- A datagram kind's body may carry the sequence.
    if d.seq == nil then
        d.seq = role(c, 1)
    end
    acks(c, d)
    if ok then
        protocol_id(c, d)
    end
    return finish()
end

-- A message put back together from fragments inside messages, read as type `ty`'s body.
local function dissect_message(L, s, ty)
    local c = reading(L, s)
    c.zone = "b"
    local d = { c = c, ptype = ty }
    local def = L.packets[ty]
    if not def then
        fault(c, "unknown_type", "message", 0, "no message is defined for type " .. istr(ty))
    elseif block(c, def.body, ROOT, 0) and c.n - c.pos >= 8 then
        fault(c, "trailing_bytes", def.name, math.ceil(c.pos / 8) * 8,
            istr(floor((c.n - c.pos) / 8)) .. " trailing bytes after the message")
    end
    d.f, d.fault, d.msgs, d.learnt = c.f, c.fault, c.msgs, c.learnt
    return d
end

-- Checksums ------------------------------------------------------------------------------

local bxor32, band32, shr32
if bit32 then
    bxor32, band32, shr32 = bit32.bxor, bit32.band, bit32.rshift
else
    local chunk = load and load("return function(a, b) return (a ~ b) & 0xffffffff end, " ..
        "function(a, b) return a & b end, function(a, n) return (a & 0xffffffff) >> n end")
    if chunk then
        bxor32, band32, shr32 = chunk()
    end
end
if not bxor32 then
    local X8 = {}
    for a = 0, 255 do
        local row = {}
        for b = 0, 255 do
            local r, p, x, y = 0, 1, a, b
            for _ = 1, 8 do
                if x % 2 ~= y % 2 then
                    r = r + p
                end
                x, y, p = floor(x / 2), floor(y / 2), p * 2
            end
            row[b] = r
        end
        X8[a] = row
    end
    bxor32 = function(a, b)
        local r, p = 0, 1
        for _ = 1, 4 do
            r = r + X8[a % 256][b % 256] * p
            a, b, p = floor(a / 256), floor(b / 256), p * 256
        end
        return r
    end
    band32 = function(a, b)
        return (a + b - bxor32(a, b)) / 2
    end
    shr32 = function(a, n)
        return floor(a / POW[n])
    end
end

local function crc_table(poly)
    local t = {}
    for i = 0, 255 do
        local c = i
        for _ = 1, 8 do
            if c % 2 == 1 then
                c = bxor32(floor(c / 2), poly)
            else
                c = floor(c / 2)
            end
        end
        t[i] = c
    end
    return t
end
local CRC32, CRC32C

local function crc(t, s)
    local c = 0xffffffff
    for i = 1, #s do
        c = bxor32(t[band32(bxor32(c, sbyte(s, i)), 255)], shr32(c, 8))
    end
    return bxor32(c, 0xffffffff)
end

local function adler32(s)
    local a, b = 1, 0
    for i = 1, #s do
        a = (a + sbyte(s, i)) % 65521
        b = (b + a) % 65521
    end
    return b * 65536 + a
end

local function checksum(alg, s)
    if alg == "crc32c" then
        CRC32C = CRC32C or crc_table(0x82f63b78)
        return crc(CRC32C, s)
    elseif alg == "adler32" then
        return adler32(s)
    end
    CRC32 = CRC32 or crc_table(0xedb88320)
    return crc(CRC32, s)
end

local function le_bytes(lo, hi, width)
    local out = {}
    for i = 0, width - 1 do
        local v = i < 4 and lo or hi
        out[#out + 1] = schar(floor(v / POW[8 * (i % 4)]) % 256)
    end
    return tconcat(out)
end

local function le32(s, at)
    local a, b, c, d = sbyte(s, at + 1, at + 4)
    return a + b * 256 + c * 65536 + d * 16777216
end

-- The articles' CRC32: over the protocol id and the packet with its first 4 bytes zeroed.
local function article_crc(L, s)
    if #s < 4 then
        return "too_short"
    end
    local computed = checksum("crc32", le_bytes(L.id[2], L.id[3], L.id[1]) .. "\0\0\0\0" .. ssub(s, 5))
    local stored = le32(s, 0)
    if computed == stored then
        return "ok"
    end
    return "crc_mismatch", stored, computed
end

-- A checksum declared field by field, `stand` (bytes, or nil for zeros) in its field.
local function declared_crc(L, s, at, stored, stand)
    local start = floor(at / 8)
    if at % 8 ~= 0 or #s < start + 4 then
        return "too_short"
    end
    local field = stand and ssub(stand .. "\0\0\0\0", 1, 4) or "\0\0\0\0"
    local prefix = (L.rule.prefix and L.id) and le_bytes(L.id[2], L.id[3], L.id[1]) or ""
    local computed = checksum(L.rule.alg, prefix .. ssub(s, 1, start) .. field .. ssub(s, start + 5))
    local lo = halves(to_wide(stored))
    if computed == lo then
        return "ok"
    end
    return "crc_mismatch", lo, computed
end

-- The state a capture builds ------------------------------------------------------------
-- Kept from the first pass, in frame order (`pinfo.visited` false): each datagram's
-- decisions that depend on earlier ones (a value learnt, a packet completed) are stored
-- under the datagram's key and read back when Wireshark dissects it again.

local STATE = { frames = {}, flows = {}, conv = {} }

local function reset_state()
    STATE = { frames = {}, flows = {}, conv = {} }
end

local NONE = {}

-- What the first pass decided for a datagram (nothing, for most).
local function decisions(env)
    return STATE.frames[env.key] or NONE
end

-- Keeps a decision of the first pass for the passes after it.
local function decide(env, k, v)
    local st = STATE.frames[env.key]
    if not st then
        st = {}
        STATE.frames[env.key] = st
    end
    st[k] = v
end

local function flow_state(L, env)
    local k = L.name .. "|" .. env.flow
    local fs = STATE.flows[k]
    if not fs then
        fs = { entries = {}, counts = {}, ncounts = 0, groups = {}, ngroups = 0, clock = 0 }
        STATE.flows[k] = fs
    end
    return fs
end

local function seqdiff(a, b)
    local d = (a - b) % 65536
    if d > 32768 then
        return d - 65536
    end
    return d
end

local function saw_count(fs, n)
    if not fs.counts[n] then
        fs.counts[n] = true
        fs.ncounts = fs.ncounts + 1
    end
end

-- A datagram fragment into its flow's sequence buffer: the packet's bytes and the
-- frames of its fragments when it completes (src/engine/reassembly.rs).
local function reassemble(L, fs, f)
    if f.count == 0 or f.count > L.maxfrag or f.count > 256 then
        return nil
    end
    if f.id >= f.count then
        return nil
    end
    local carried = #f.data - f.lead
    if carried < 0 then
        carried = 0
    end
    if carried > L.fsize then
        return nil
    end
    if f.id + 1 < f.count and carried < L.fsize then
        return nil
    end
    if fs.newest then
        local d = seqdiff(f.seq, fs.newest)
        if d <= -256 then
            return nil
        end
        if d > 0 then
            fs.newest = f.seq
            for slot, e in pairs(fs.entries) do
                if seqdiff(f.seq, e.seq) >= 256 then
                    fs.entries[slot] = nil
                end
            end
        end
    else
        fs.newest = f.seq
    end
    local slot = f.seq % 256
    local e = fs.entries[slot]
    if e and e.seq ~= f.seq then
        fs.entries[slot] = nil
        e = nil
    end
    if not e then
        e = { seq = f.seq, done = false, count = f.count, received = 0, have = {}, data = {}, frames = {} }
        fs.entries[slot] = e
    end
    if e.received == 0 then
        saw_count(fs, f.count)
    end
    if e.count ~= f.count or e.done or e.have[f.id] then
        return nil
    end
    e.have[f.id], e.data[f.id], e.frames[f.id] = true, f.data, f.frame
    e.received = e.received + 1
    if e.received < e.count then
        return nil
    end
    local parts, frames = {}, {}
    for i = 0, e.count - 1 do
        parts[#parts + 1] = e.data[i]
        frames[#frames + 1] = e.frames[i]
    end
    e.done, e.data, e.frames = true, {}, {}
    return { bytes = tconcat(parts), frames = frames }
end

-- A fragment carried in a message into its flow's messages (src/engine/msgfrag.rs).
local function message_reassemble(L, fs, ty, f, data, frame)
    local most
    if f.total then
        most = f.total < L.maxmsg and f.total or L.maxmsg
    else
        most = math.ceil(L.maxmsg / (L.fsize > 0 and L.fsize or 1))
    end
    if most < 1 then
        most = 1
    end
    if f.count == 0 or f.count > most then
        return nil
    end
    if f.id >= f.count then
        return nil
    end
    if not fs.counts[f.count] and fs.ncounts >= 1024 then
        return nil
    end
    if f.total and f.total > L.maxmsg then
        return nil
    end
    if f.offset and f.total then
        if f.offset + f.len > f.total then
            return nil
        end
    elseif f.len > L.fsize or (f.id + 1 < f.count and f.len < L.fsize) then
        return nil
    end
    local key = ty .. ":" .. f.key
    local g = fs.groups[key]
    if not g then
        if fs.ngroups >= 256 then
            local oldest, ok
            for k2, g2 in pairs(fs.groups) do
                local rank = (g2.done and 0 or 1) * 2 ^ 60 + g2.age
                if not oldest or rank < ok then
                    oldest, ok = k2, rank
                end
            end
            if oldest then
                fs.groups[oldest] = nil
                fs.ngroups = fs.ngroups - 1
            end
        end
        fs.clock = fs.clock + 1
        g = { age = fs.clock, done = false, count = f.count, total = f.total, received = 0, have = {}, parts = {}, frames = {} }
        fs.groups[key] = g
        fs.ngroups = fs.ngroups + 1
        saw_count(fs, f.count)
    end
    if g.count ~= f.count or g.total ~= f.total then
        return nil
    end
    if g.done or g.have[f.id] then
        return nil
    end
    local at = f.offset or f.id * L.fsize
    g.parts[#g.parts + 1] = { at, data }
    g.frames[#g.frames + 1] = { f.id, frame }
    g.have[f.id] = true
    g.received = g.received + 1
    if g.received < g.count then
        return nil
    end
    -- Placed by offset, later fragments over earlier ones, zeros where none landed.
    local size = 0
    for _, p in ipairs(g.parts) do
        if p[1] + #p[2] > size then
            size = p[1] + #p[2]
        end
    end
    local len = g.total or size
    local buf = {}
    for i = 1, len do
        buf[i] = 0
    end
    for _, p in ipairs(g.parts) do
        for j = 1, #p[2] do
            if p[1] + j <= len then
                buf[p[1] + j] = sbyte(p[2], j)
            end
        end
    end
    local chunks = {}
    for i = 1, len, 4096 do
        local j = i + 4095
        if j > len then
            j = len
        end
        chunks[#chunks + 1] = schar(unpack_bytes(buf, i, j))
    end
    table.sort(g.frames, function(a, b)
        return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2])
    end)
    local frames = {}
    for _, x in ipairs(g.frames) do
        frames[#frames + 1] = x[2]
    end
    g.done, g.parts, g.frames = true, {}, {}
    return { bytes = tconcat(chunks), frames = frames }
end

-- Count-down and flagged fragments placed by their stream's sequence (src/engine/msgruns.rs):
-- a message is the run of sequences from a first fragment to the next last one; a
-- count-down fragment is first when the sequence before it ended a message (or when it is
-- the lowest its run has shown). Marks (ended a message, went into one) are kept for the
-- last 1024 sequences of a run, as gpcap keeps them.
local RUN_MARKS = 1024

local function run_mark(run, x)
    local m = run.marks[x % RUN_MARKS]
    if m and m[1] == x + 1 then
        return m
    end
    return nil
end

local function run_set_mark(run, x, ended, done)
    local i = x % RUN_MARKS
    local m = run.marks[i]
    if m and m[1] == x + 1 then
        m[2], m[3] = m[2] or ended, m[3] or done
    else
        run.marks[i] = { x + 1, ended, done }
    end
end

local function run_starts(run, x, part)
    if part.rem == nil then
        return part.first
    end
    local before = run_mark(run, x - 1)
    return (before ~= nil and before[2]) or (x == run.lowest and before == nil)
end

-- The sequence `s` extended next to the newest the run has seen.
local function run_extend(run, s, bits)
    local mod = 2 ^ bits
    local d = (s - run.highest) % mod
    if d >= mod / 2 then
        d = d - mod
    end
    return run.highest + d
end

-- Completes the messages the fragment at `x` belongs to and the ones after it that waited.
local function run_complete(L, run, x, as, out)
    local most = L.maxfrag
    while true do
        local start = x
        while true do
            local e = run.held[start]
            if not e then
                return
            end
            if run_starts(run, start, e.part) then
                break
            end
            if x - start + 1 >= most then
                return
            end
            start = start - 1
        end
        local stop = x
        while true do
            local e = run.held[stop]
            if not e then
                return
            end
            if e.part.last then
                break
            end
            if stop - start + 1 >= most then
                return
            end
            stop = stop + 1
        end
        local consistent, total = true, 0
        for k = start, stop do
            local e = run.held[k]
            if e.part.rem ~= nil then
                consistent = consistent and k + e.part.rem == stop
            else
                consistent = consistent and e.part.first == (k == start) and e.part.last == (k == stop)
            end
            total = total + #e.data
        end
        if not consistent or total > L.maxmsg then
            for k = start, stop do
                run.held[k] = nil
                run.nheld = run.nheld - 1
            end
            return
        end
        local parts, frames = {}, {}
        for k = start, stop do
            local e = run.held[k]
            parts[#parts + 1], frames[#frames + 1] = e.data, e.frame
            run.held[k] = nil
            run.nheld = run.nheld - 1
            run_set_mark(run, k, false, true)
        end
        run_set_mark(run, stop, true, false)
        if stop > start then
            out[#out + 1] = { bytes = tconcat(parts), frames = frames, as = as }
        end
        if not run.held[stop + 1] then
            return
        end
        x = stop + 1
    end
end

-- A count-down or flagged fragment into its flow's runs; what it completes goes to `out`.
local function run_push(L, fs, ty, part, data, frame, out)
    if part.rem ~= nil and part.rem >= L.maxfrag then
        return
    end
    if #data > L.maxmsg then
        return
    end
    local as = msgfrag_of(L, ty) and msgfrag_of(L, ty).as
    fs.runs = fs.runs or {}
    fs.nruns = fs.nruns or 0
    local key = ty .. "|" .. part.si .. "|" .. part.key
    local run = fs.runs[key]
    if not run then
        if fs.nruns >= 256 then
            local oldest
            for k, r in pairs(fs.runs) do
                if not oldest or r.age < fs.runs[oldest].age then
                    oldest = k
                end
            end
            fs.runs[oldest] = nil
            fs.nruns = fs.nruns - 1
        end
        fs.clock = fs.clock + 1
        run = { age = fs.clock, highest = part.seq, lowest = part.seq, held = {}, nheld = 0, marks = {} }
        fs.runs[key] = run
        fs.nruns = fs.nruns + 1
    end
    local x = run_extend(run, part.seq, part.bits)
    local m = run_mark(run, x)
    if (m and m[3]) or run.held[x] then
        return
    end
    if x > run.highest then
        run.highest = x
    end
    if x < run.lowest then
        run.lowest = x
    end
    -- A message of one fragment: nothing to hold.
    if part.last and run_starts(run, x, part) then
        run_set_mark(run, x, true, true)
        return run_complete(L, run, x + 1, as, out)
    end
    run.held[x] = { data = data, frame = frame, part = part }
    run.nheld = run.nheld + 1
    if part.last then
        run_set_mark(run, x, true, false)
    end
    -- A run holds twice the longest message at most: the oldest is given up.
    while run.nheld > 2 * L.maxfrag do
        local low
        for k in pairs(run.held) do
            if not low or k < low then
                low = k
            end
        end
        run.held[low] = nil
        run.nheld = run.nheld - 1
    end
    run_complete(L, run, x, as, out)
    if part.last then
        run_complete(L, run, x + 1, as, out)
    end
end

-- One datagram through a layer's engine ---------------------------------------------------
-- An event: `status`, `crc_ok`, the dissection `d`, the packet a fragment completed
-- (`whole`), the messages its fragments completed (`mdone`), and what inner layers read
-- in it (`carried`: {layer, carrier field, event}).

local datagram

-- The fields of `d` whose bytes layer `L`'s inner layers read, each read there.
local function carry(L, s, d, env)
    local out = {}
    if not L.carry then
        return out
    end
    for i = 1, #d.f do
        local f = d.f[i]
        local target = f[2] == NODE and L.carry[f[3]]
        if target and f[7] % 8 == 0 then
            local IL = LAYERS[target]
            local a, b = f[7] / 8, floor((f[7] + f[8]) / 8)
            if b <= #s then
                local inner = ssub(s, a + 1, b)
                local env2 = {
                    key = env.key .. "/" .. IL.name .. "@" .. istr(f[7]),
                    flow = env.flow, conv = env.conv, frame = env.frame, visited = env.visited,
                }
                local ev = datagram(IL, inner, env2)
                out[#out + 1] = { L = IL, carrier = i, at = f[7], ev = ev }
                if ev.whole then
                    out[#out + 1] = { L = IL, carrier = i, at = f[7], ev = ev.whole, reassembled = true }
                end
                for _, m in ipairs(ev.mdone or {}) do
                    out[#out + 1] = { L = IL, carrier = i, at = f[7], ev = m, reassembled = true }
                end
            end
        end
    end
    return out
end

-- The checksum of a protocol that declares one field by field, with the value its
-- conversation learnt standing in when the definition says so.
local function settle(L, s, d, ev, env)
    if not L.rule then
        return
    end
    local stand
    if d.stand_in then
        if env.visited then
            stand = decisions(env).stand
        else
            local learnt = STATE.conv[env.conv]
            stand = learnt and learnt[L.rule.stand_in]
            if stand then
                decide(env, "stand", stand)
            end
        end
        if not stand then
            ev.status = "crc_unverified"
            ev.crc_ok = nil
            d.fault = {
                kind = "check", field = "checksum", bit = d.crc_at or 0,
                reason = "the checksum needs `" .. (L.remembered[L.rule.stand_in] or "") ..
                    "`, which this conversation has not sent yet",
            }
            return
        end
    end
    if d.crc_at == nil or d.crc == nil then
        return
    end
    local verdict, stored, computed = declared_crc(L, s, d.crc_at, d.crc, stand)
    ev.crc_ok = verdict == "ok"
    if verdict ~= "ok" then
        ev.status, ev.stored, ev.computed = verdict, stored, computed
    end
end

-- A packet put back together: validated and dissected like a datagram. One that fails
-- the checksum keeps what gpcap's validator holds then: no fields, and the completing
-- fragment's type, sequence and fault (`frag`).
local function whole_packet(L, bytes, frames, env, frag)
    local ev = { size = #bytes, bytes = bytes, frames = frames, reassembled = true, layer = L }
    if L.checksum == "crc32" and L.id then
        local verdict, stored, computed = article_crc(L, bytes)
        ev.crc_ok = verdict == "ok"
        if verdict ~= "ok" then
            ev.status, ev.stored, ev.computed = verdict == "too_short" and "crc_mismatch" or verdict, stored, computed
            ev.d = { f = {}, msgs = {}, c = reading(L, bytes), fault = frag.fault, ptype = frag.ptype, seq = frag.seq }
            ev.seq = frag.seq
            return ev
        end
    end
    local d = dissect(L, bytes)
    ev.d = d
    ev.status = d.fault and "malformed" or "ok"
    ev.ptype, ev.seq, ev.ack = d.ptype, d.seq or frag.seq, d.ack
    if ev.status == "ok" then
        local env2 = {
            key = env.key .. "/r", flow = env.flow, conv = env.conv, frame = env.frame, visited = env.visited,
        }
        ev.carried = carry(L, bytes, d, env2)
    end
    return ev
end

datagram = function(L, s, env)
    local ev = { size = #s, bytes = s, layer = L }
    if L.checksum == "crc32" and L.id then
        local verdict, stored, computed = article_crc(L, s)
        ev.crc_ok = verdict == "ok"
        if verdict ~= "ok" then
            ev.status, ev.stored, ev.computed = verdict, stored, computed
            ev.d = dissect(L, s)
            return ev
        end
    end
    local d = dissect(L, s)
    ev.d = d
    if d.ptype ~= nil and (d.seq ~= nil or L.messages) then
        ev.status = d.fault and "malformed" or "ok"
    else
        ev.status = "bad_header"
        return ev
    end
    settle(L, s, d, ev, env)
    local valid = ev.status == "ok" or ev.status == "malformed"
    if valid and not env.visited then
        for _, x in ipairs(d.learnt) do
            local a, b = x[2] / 8, (x[2] + x[3]) / 8
            if b <= #s then
                STATE.conv[env.conv] = STATE.conv[env.conv] or {}
                STATE.conv[env.conv][x[1]] = ssub(s, a + 1, b)
            end
        end
    end
    if ev.status == "ok" then
        ev.carried = carry(L, s, d, env)
    end
    if valid then
        ev.ptype = d.ptype
        if d.seq ~= nil then
            ev.seq, ev.ack = d.seq, d.ack
        end
    end
    if valid and L.msgfrag_any then
        local done = decisions(env).mdone or NONE
        if not env.visited then
            local fs = flow_state(L, env)
            done = {}
            for _, m in ipairs(d.msgs) do
                local f = m.frag
                if m.ty and f and f.run and f.at + f.len <= #s then
                    run_push(L, fs, m.ty, f.run, ssub(s, f.at + 1, f.at + f.len), env.frame, done)
                elseif m.ty and f and f.at + f.len <= #s then
                    local r = message_reassemble(L, fs, m.ty, f, ssub(s, f.at + 1, f.at + f.len), env.frame)
                    if r then
                        r.as = msgfrag_of(L, m.ty) and msgfrag_of(L, m.ty).as
                        done[#done + 1] = r
                    end
                end
            end
            if #done > 0 then
                decide(env, "mdone", done)
            end
        end
        ev.mdone = {}
        for _, r in ipairs(done) do
            local m = { size = #r.bytes, bytes = r.bytes, frames = r.frames, reassembled = true, layer = L, status = "ok" }
            if r.as then
                m.d = dissect_message(L, r.bytes, r.as)
                m.status = m.d.fault and "malformed" or "ok"
                m.ptype = r.as
            else
                m.d = { f = {}, msgs = {}, c = reading(L, r.bytes) }
            end
            ev.mdone[#ev.mdone + 1] = m
        end
    end
    if not valid or d.seq == nil or not d.frag then
        return ev
    end
    ev.frag = d.frag
    local whole = decisions(env).whole
    if not env.visited then
        local fs = flow_state(L, env)
        local f = d.frag
        local data = ssub(s, f.off + 1, f.off + f.len)
        local lo = halves(to_wide(d.seq))
        whole = reassemble(L, fs, {
            seq = lo % 65536, id = f.id, count = f.count, frame = env.frame, data = data, lead = f.lead,
        })
        if whole then
            decide(env, "whole", whole)
        end
    end
    if whole then
        ev.whole = whole_packet(L, whole.bytes, whole.frames, env, d)
    end
    return ev
end

-- Values as gpcap shows them ---------------------------------------------------------------

local function int_text(v, signed)
    if type(v) == "table" then
        if v.signed or signed then
            return tostring(Int64(v.lo, v.hi))
        end
        return tostring(UInt64(v.lo, v.hi))
    end
    return istr(v)
end

local function decimals(L, f)
    local nd = L.N[f[1]]
    return nd and nd.cf and nd.cf.dec
end

local function float_text(x, d)
    if d then
        return fixed(x, d)
    end
    return f32text(x)
end

local function enum_of(L, f)
    if f[2] ~= NODE then
        return nil
    end
    local nd = L.N[f[1]]
    return nd and nd.enum and L.enums[nd.enum]
end

-- Bytes as text, each invalid UTF-8 sequence one U+FFFD (Rust's `from_utf8_lossy`).
local function lossy(b)
    if not b:find("[\128-\255]") then
        return b
    end
    local out, i, n = {}, 1, #b
    local function cont(k, lo, hi)
        local x = sbyte(b, k)
        return x and x >= lo and x <= hi
    end
    while i <= n do
        local c = sbyte(b, i)
        local need, lo, hi = 0, 0x80, 0xbf
        if c < 0x80 then
            need = -1
        elseif c >= 0xc2 and c <= 0xdf then
            need = 1
        elseif c == 0xe0 then
            need, lo = 2, 0xa0
        elseif (c >= 0xe1 and c <= 0xec) or c == 0xee or c == 0xef then
            need = 2
        elseif c == 0xed then
            need, hi = 2, 0x9f
        elseif c == 0xf0 then
            need, lo = 3, 0x90
        elseif c >= 0xf1 and c <= 0xf3 then
            need = 3
        elseif c == 0xf4 then
            need, hi = 3, 0x8f
        end
        if need == -1 then
            out[#out + 1] = schar(c)
            i = i + 1
        elseif need == 0 then
            out[#out + 1] = "\239\191\189"
            i = i + 1
        else
            local k, ok = 1, true
            if not cont(i + 1, lo, hi) then
                ok = false
            else
                k = 2
                while k <= need do
                    if not cont(i + k, 0x80, 0xbf) then
                        ok = false
                        break
                    end
                    k = k + 1
                end
            end
            if ok then
                out[#out + 1] = ssub(b, i, i + need)
                i = i + need + 1
            else
                out[#out + 1] = "\239\191\189"
                i = i + k
            end
        end
    end
    return tconcat(out)
end

local function text_of(kind, b)
    if kind == "text" then
        b = b:gsub("%z+$", "")
    end
    return lossy(b)
end

local function hex(b)
    return (b:gsub(".", function(ch)
        return sfmt("%02x", sbyte(ch))
    end))
end

local function debug_quoted(b)
    local out = b:gsub('[%c"\\]', function(ch)
        local map = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t", ["\0"] = "\\0" }
        return map[ch] or sfmt("\\u{%x}", sbyte(ch))
    end)
    return '"' .. out .. '"'
end

-- A field's value in words (crates/gpcap/src/print/tree.rs `value_text`).
local function value_text(L, f, s)
    local v, vt = f[10], f[11]
    if vt == nil or v == nil then
        return ""
    elseif vt == "u" or vt == "i" then
        local e = enum_of(L, f)
        local name = e and type(v) == "number" and e[v]
        local t = int_text(v, vt == "i")
        if name then
            return name .. " (" .. t .. ")"
        end
        if vt == "u" and type(v) == "number" and (f[4] == "check" or (f[8] == 32 and f[4] == "bits")) then
            return t .. sfmt(" (0x%08x)", v)
        end
        return t
    elseif vt == "b" then
        return v and "True" or "False"
    elseif vt == "f" then
        return float_text(v, decimals(L, f))
    elseif vt == "d" then
        return f64text(v)
    elseif vt == "3" then
        local d = decimals(L, f)
        return "(" .. float_text(v[1], d) .. ", " .. float_text(v[2], d) .. ", " .. float_text(v[3], d) .. ")"
    elseif vt == "4" then
        return "(" .. f32text(v[1]) .. ", " .. f32text(v[2]) .. ", " .. f32text(v[3]) .. ", " .. f32text(v[4]) .. ")"
    elseif vt == "y" then
        local b = ssub(s, v[1] + 1, v[1] + v[2])
        if f[4] == "string" or f[4] == "text" or f[4] == "cstring" then
            return debug_quoted(text_of(f[4], b))
        end
        local shown = {}
        for i = 1, (#b < 32 and #b or 32) do
            shown[i] = sfmt("%02x", sbyte(b, i))
        end
        if #b > 32 then
            return tconcat(shown) .. "… (" .. #b .. " bytes)"
        end
        return tconcat(shown) .. " (" .. #b .. " bytes)"
    end
    return ""
end

local function count_text(n, one)
    return istr(n) .. " " .. one .. (n == 1 and "" or "s")
end

-- Info ------------------------------------------------------------------------------------

local SEP = " · "

local function chars(t)
    local _, n = t:gsub("[^\128-\191]", "")
    return n
end

local function type_name(L, t)
    if t == nil then
        return nil
    end
    if L.fragment and t == L.ftype then
        return "fragment"
    end
    if L.dtype and t == L.dtype then
        return "datagram"
    end
    local p = L.packets[t]
    return p and p.name
end

-- A sequence (a slot's i64) as the u64 gpcap shows.
local function seq_text(v)
    local lo, hi = halves(to_wide(v))
    if hi < 2 ^ 21 then
        return istr(hi * P32 + lo)
    end
    return tostring(UInt64(lo, hi))
end

local function head(L, ptype, seq, ack)
    local out = ""
    if ptype ~= nil then
        out = type_name(L, ptype) or "undefined"
    end
    if seq ~= nil then
        out = out .. " seq " .. seq_text(seq)
    end
    if ack ~= nil then
        out = out .. " ack " .. istr(ack)
    end
    return (out:gsub("^%s+", ""))
end

local function messages_summary(L, d, max)
    local out, i, msgs = "", 1, d.msgs
    while i <= #msgs do
        local j = i
        while j < #msgs and msgs[j + 1].ty == msgs[i].ty do
            j = j + 1
        end
        local name = (msgs[i].ty and type_name(L, msgs[i].ty)) or "?"
        if out ~= "" then
            out = out .. " "
        end
        out = out .. name
        if j > i then
            out = out .. "×" .. (j - i + 1)
        end
        if chars(out) > max and j < #msgs then
            out = out .. " …"
            break
        end
        i = j + 1
    end
    return out
end

local GROUPS = {
    array = true, list = true, ["relative-list"] = true, struct = true, vector = true, quaternion = true,
    ["compressed-vector"] = true, ["smallest-three"] = true, string = true, element = true,
    ["relative-index"] = true, sentinel = true,
}

local function default_info(L, d, s)
    if #d.msgs > 0 then
        return messages_summary(L, d, 80)
    end
    local skip = #L.B[L.header]
    local parts, width = {}, 0
    for _, f in ipairs(d.f) do
        if f[5] == ROOT and f[4] ~= "align" and f[4] ~= "check" then
            if skip > 0 then
                skip = skip - 1
            else
                local name = label_name(d.c, f[2], f[3])
                local value = value_text(L, f, s)
                local part
                if GROUPS[f[4]] and f[4] ~= "string" and value ~= "" and ssub(value, 1, 1) ~= "(" then
                    part = name .. "[" .. value .. "]"
                elseif value == "" then
                    part = name
                else
                    part = name .. "=" .. value
                end
                width = width + chars(part) + 1
                parts[#parts + 1] = part
                if width > 80 then
                    break
                end
            end
        end
    end
    return tconcat(parts, " ")
end

-- The plain path (no indices) of every field of `d`.
local function plain_paths(d)
    local P = {}
    for i, f in ipairs(d.f) do
        local up = f[5] ~= ROOT and P[f[5]] or nil
        if f[2] == INDEX then
            P[i] = up or ""
        else
            local name = label_name(d.c, f[2], f[3])
            P[i] = (up and up ~= "") and (up .. "." .. name) or name
        end
    end
    return P
end

-- The type `ptype`'s template filled from the fields `lo`..`hi` of `d` (all without them).
local function template(L, d, s, ptype, lo, hi)
    ptype = ptype or d.ptype
    local def = ptype ~= nil and L.packets[ptype]
    if not def or not def.info then
        return nil
    end
    lo, hi = lo or 1, hi or #d.f
    local P = plain_paths(d)
    local out = {}
    for _, piece in ipairs(def.info) do
        if piece[1] == "text" then
            out[#out + 1] = piece[2]
        elseif piece[1] == "unknown" then
            out[#out + 1] = "?"
        else
            local want, full = piece[2], piece[3]
            local n, first = 0, nil
            local wrong = piece[4] ~= nil and piece[4] ~= ptype
            for i, f in ipairs(d.f) do
                if not wrong and i >= lo and i <= hi and P[i] == want and f[2] ~= INDEX and (full == nil or path(d.c, f[5], f[2], f[3]) == full) then
                    first = first or f
                    if piece[1] == "count" then
                        if f[4] == "array" or ssub(f[4], -4) == "list" then
                            for j = i + 1, #d.f do
                                if d.f[j][5] == i and d.f[j][2] == INDEX then
                                    n = n + 1
                                end
                            end
                        else
                            n = n + 1
                        end
                    end
                end
            end
            if piece[1] == "count" then
                out[#out + 1] = istr(n)
            else
                out[#out + 1] = first and value_text(L, first, s) or "-"
            end
        end
    end
    return tconcat(out)
end

-- Each message's template filled from its own fields (its type's name without one), runs
-- of the same text counted, about 80 characters at most (crates/gpcap/src/print/info.rs).
local function messages_info(L, d, s)
    local texts, next = {}, 1
    for i, m in ipairs(d.msgs) do
        local lo, hi = 1, 0
        for k = next, #d.f do
            local f = d.f[k]
            if f[4] == "message" and f[2] == INDEX and f[3] == i - 1 then
                local inside = { [k] = true }
                hi = k
                for j = k + 1, #d.f do
                    if not inside[d.f[j][5]] then
                        break
                    end
                    inside[j], hi = true, j
                end
                lo, next = k + 1, hi + 1
                break
            end
        end
        local t = m.ty
        local text = t and template(L, d, s, t, lo, hi)
        texts[#texts + 1] = text or (t and type_name(L, t)) or "?"
    end
    local out, i = "", 1
    while i <= #texts do
        local j = i
        while j < #texts and texts[j + 1] == texts[i] do
            j = j + 1
        end
        if out ~= "" then
            out = out .. ", "
        end
        out = out .. texts[i]
        if j > i then
            out = out .. " ×" .. (j - i + 1)
        end
        i = j + 1
        if chars(out) > 80 and i <= #texts then
            out = out .. ", …"
            break
        end
    end
    return out
end

-- The packet's template filled, or a summary of its fields; a datagram of messages whose
-- types have templates says each message's.
local function own_info(L, d, s)
    local t = template(L, d, s)
    if t then
        return t
    end
    if #d.msgs > 0 and L.msg_info then
        return messages_info(L, d, s)
    end
    return default_info(L, d, s)
end

local describe

local function layer_info(out, c)
    local e, L = c.ev, c.L
    local part = L.name
    local named = L.npackets > 1 and #(e.d and e.d.msgs or {}) == 0
    local ptype = named and e.ptype or nil
    local frag = not e.reassembled and e.frag or nil
    local h = head(L, ptype, e.seq, e.ack)
    if h ~= "" then
        part = part .. " " .. h
    end
    if frag then
        part = part .. " fragment " .. istr(frag.id) .. " of " .. istr(frag.count)
    end
    if e.reassembled then
        part = part .. " reassembled from " .. #e.frames
    end
    if e.status ~= "ok" then
        part = part .. " " .. e.status
    end
    local body = ""
    if e.d and #(e.carried or {}) == 0 and not frag then
        body = template(L, e.d, e.bytes) or ((#e.d.msgs == 0 and #e.d.f == 0) and "" or own_info(L, e.d, e.bytes))
    end
    out[#out + 1] = SEP
    if part == L.name and body ~= "" then
        out[#out + 1] = body
    elseif body == "" then
        out[#out + 1] = part
    else
        out[#out + 1] = part .. SEP .. body
    end
    for _, inner in ipairs(e.carried or {}) do
        layer_info(out, inner)
    end
end

-- The Info of an event and of what inner layers read in it (crates/gpcap/src/print/info.rs).
describe = function(L, ev)
    local d = ev.d
    if not d then
        return ""
    end
    local text
    if #(ev.carried or {}) == 0 then
        text = own_info(L, d, ev.bytes)
    else
        text = template(L, d, ev.bytes) or head(L, d.ptype, d.seq, nil)
    end
    local out = { text }
    for _, c in ipairs(ev.carried or {}) do
        layer_info(out, c)
    end
    text = tconcat(out)
    if d.fault then
        text = "malformed: " .. d.fault.kind .. " at " .. d.fault.field .. SEP .. text
    end
    return text
end

-- The tree --------------------------------------------------------------------------------

local function suffix(bit, len)
    return " [bit " .. istr(bit) .. ", " .. count_text(len, "bit") .. "]"
end

-- A field's value as its ProtoField holds it (`t`: the field's type).
local function field_value(t, f, s, L)
    local v, vt = f[10], f[11]
    if t == "bool" then
        if vt == "b" then
            return v
        end
        return type(v) ~= "number" or v ~= 0
    elseif t == "u32" or t == "i32" then
        if vt == "b" then
            return v and 1 or 0
        end
        return type(v) == "number" and v or nil
    elseif t == "u64" or t == "i64" then
        if vt == "b" then
            v = v and 1 or 0
        end
        if type(v) ~= "number" and type(v) ~= "table" then
            return nil
        end
        local lo, hi = halves(v)
        if t == "u64" then
            return UInt64(lo, hi)
        end
        return Int64(lo, hi)
    elseif t == "dbl" then
        if vt == "f" then
            local d = decimals(L, f)
            if d then
                return tonumber(fixed(v, d))
            end
            return v
        elseif vt == "d" then
            return v
        elseif type(v) == "number" then
            return v
        end
        return nil
    elseif t == "str" then
        if vt == "y" then
            local b = ssub(s, v[1] + 1, v[1] + v[2])
            if f[4] == "string" or f[4] == "text" or f[4] == "cstring" then
                return text_of(f[4], b)
            end
            return hex(b)
        end
        return value_text(L, f, s)
    end
    return nil
end

local function range_of(tvb, at, len)
    local total = tvb:len()
    if at > total then
        at = total
    end
    if at + len > total then
        len = total - at
    end
    return tvb:range(at, len)
end

local render_event

-- The abbreviation of a field named `name` under a field abbreviated `up` (cached: a
-- packet of thousands of fields builds no string for them).
local function child_abbrev(L, up, name)
    local row = L.AC[up]
    if not row then
        row = {}
        L.AC[up] = row
    end
    local a = row[name]
    if not a then
        a = up .. "." .. name
        row[name] = a
    end
    return a
end

-- A value's text cut to fit Wireshark's label (240 bytes) with the bit range after it.
local function clip(t)
    if #t <= 160 then
        return t
    end
    local cut = 157
    while cut > 1 and sbyte(t, cut + 1) and sbyte(t, cut + 1) >= 0x80 and sbyte(t, cut + 1) < 0xc0 do
        cut = cut - 1
    end
    return ssub(t, 1, cut) .. "…"
end

local function bits_suffix(bit, len)
    if len == 1 then
        return sfmt(" [bit %d, 1 bit]", bit)
    end
    return sfmt(" [bit %d, %d bits]", bit, len)
end

-- Items for the fields of `ev` under `root`; `tvb` holds its bytes from byte `boff`, and
-- `base` is the bit its first bit has in the datagram the capture carried.
local function render_fields(L, ev, root, tvb, boff, base)
    local d = ev.d
    local s = ev.bytes
    local items, abbrevs = {}, {}
    L.AC = L.AC or {}
    local tname = d.ptype ~= nil and type_name(L, d.ptype)
    local body_root = tname and (L.name .. "." .. tname) or L.name
    local carried = {}
    for _, x in ipairs(ev.carried or {}) do
        carried[x.carrier] = carried[x.carrier] or {}
        tinsert(carried[x.carrier], x)
    end
    local total = tvb:len()
    -- A tree nobody sees (tshark without -V, Wireshark's first pass) wants only the
    -- fields a filter names, as Wireshark's own dissectors fake the rest.
    local visible = root.visible
    local refd = {}
    for i, f in ipairs(d.f) do
        local up = f[5]
        local parent = up ~= ROOT and items[up] or root
        if f[6] > 24 or not visible then
            parent = root
        end
        local lt = f[2]
        local abbrev
        if lt == INDEX then
            abbrev = up ~= ROOT and abbrevs[up] or L.name
        else
            local upa = up ~= ROOT and abbrevs[up] or (f[12] == "b" and body_root or L.name)
            abbrev = child_abbrev(L, upa, lt == NODE and L.N[f[3]].name or f[3])
        end
        abbrevs[i] = abbrev
        local F = L.F[abbrev]
        if not visible and not carried[i] then
            local r = F and refd[F]
            if r == nil and F then
                r = root:referenced(F[1])
                refd[F] = r
            end
            if not r then
                goto next
            end
        end
        local bit, len = f[7], f[8]
        local a = floor(bit / 8)
        local nbytes = len > 0 and (floor((bit + len + 7) / 8) - a) or 0
        local at = boff + a
        if at > total then
            at = total
        end
        if at + nbytes > total then
            nbytes = total - at
        end
        local range = tvb:range(at, nbytes)
        local item
        if lt == INDEX then
            item = parent:add(range, "[" .. istr(f[3]) .. "]" .. bits_suffix(base + bit, len))
        elseif f[4] == "derived" then
            local fv = F and field_value(F[2], f, s, L)
            if fv ~= nil then
                item = parent:add(F[1], fv)
                item:append_text(sfmt(" [derived at bit %d]", base + bit))
            else
                item = parent:add(range, label_name(d.c, lt, f[3]) .. ": " .. value_text(L, f, s) ..
                    sfmt(" [derived at bit %d]", base + bit))
            end
            item:set_generated()
        else
            local t = F and F[2]
            local fv = F and t ~= "none" and t ~= "bytes" and field_value(t, f, s, L)
            if t == "bytes" then
                item = parent:add(F[1], range)
                item:set_text(label_name(d.c, lt, f[3]) .. ": " .. clip(value_text(L, f, s)) .. bits_suffix(base + bit, len))
            elseif fv ~= nil and fv ~= false or (t == "bool" and fv == false) then
                item = parent:add(F[1], range, fv)
                local vt = f[11]
                if vt == "f" or vt == "d" or t == "str" then
                    item:set_text(label_name(d.c, lt, f[3]) .. ": " .. clip(value_text(L, f, s)) .. bits_suffix(base + bit, len))
                else
                    item:append_text(bits_suffix(base + bit, len))
                end
            else
                local vtext = clip(value_text(L, f, s))
                local text = label_name(d.c, lt, f[3]) .. (vtext ~= "" and (": " .. vtext) or "") .. bits_suffix(base + bit, len)
                if t == "none" then
                    item = parent:add(F[1], range)
                    item:set_text(text)
                else
                    item = parent:add(range, text)
                end
            end
        end
        items[i] = item
        for _, x in ipairs(carried[i] or {}) do
            if x.reassembled then
                render_event(x.L, x.ev, item, nil, 0, 0)
            else
                render_event(x.L, x.ev, item, tvb, boff + x.at / 8, base + x.at)
            end
        end
        ::next::
    end
    return items
end

local function root_text(L, ev)
    local d = ev.d or {}
    local t = ev.ptype
    if t == nil and d.ptype ~= nil and (ev.status == "ok" or ev.status == "malformed") then
        t = d.ptype
    end
    local ty = "no header"
    local shown = d.ptype
    if shown ~= nil then
        ty = "type " .. istr(shown) .. " (" .. (type_name(L, shown) or "undefined") .. ")"
    end
    local out = L.name .. " " .. ty
    if d.seq ~= nil then
        out = out .. ", sequence " .. seq_text(d.seq)
    end
    out = out .. ", " .. (ev.status or "ok")
    if d.frag and not ev.reassembled then
        out = out .. ", fragment " .. istr(d.frag.id) .. " of " .. istr(d.frag.count)
    end
    if ev.reassembled then
        local fr = {}
        for i, x in ipairs(ev.frames or {}) do
            fr[i] = istr(x)
        end
        out = out .. " [reassembled from " .. #fr .. " fragments in frames " .. tconcat(fr, ", ") .. "]"
    end
    return out
end

-- One event of layer `L` as a subtree of `parent`: its fields, its fault, and the packets
-- its fragments completed (each in a tab of its own bytes). `tvb` nil: the event's own
-- bytes are a packet put back together.
render_event = function(L, ev, parent, tvb, boff, base)
    if tvb == nil then
        tvb = ByteArray.new(ev.bytes, true):tvb("Reassembled " .. L.name)
        boff, base = 0, 0
    end
    local root = parent:add(L.proto, range_of(tvb, boff, ev.size))
    root:set_text(root_text(L, ev))
    if ev.d then
        render_fields(L, ev, root, tvb, boff, base)
        local flt = ev.d.fault
        if flt then
            local a = floor(flt.bit / 8)
            local item = root:add(range_of(tvb, boff + a, a < ev.size and 1 or 0),
                "[Malformed: " .. flt.kind .. " at bit " .. istr(base + flt.bit) .. " in " .. flt.field .. ": " .. flt.reason .. "]")
            item:add_proto_expert_info(L.X[flt.kind], flt.kind .. " at bit " .. istr(base + flt.bit) .. " in " .. flt.field .. ": " .. flt.reason)
        end
        if #(ev.d.f) == 0 and not flt and ev.reassembled and ev.size > 0 then
            root:add(L.F_bytes, range_of(tvb, boff, ev.size))
        end
    end
    if ev.status == "crc_mismatch" and ev.stored then
        root:add_proto_expert_info(L.X.crc, sfmt("checksum mismatch: stored 0x%08x, computed 0x%08x", ev.stored, ev.computed))
    elseif ev.status == "too_short" then
        root:add_proto_expert_info(L.X.crc, "too short for its checksum")
    end
    if ev.whole then
        render_event(L, ev.whole, parent, nil)
    end
    for _, m in ipairs(ev.mdone or {}) do
        render_event(L, m, parent, nil)
    end
    return root
end

-- Dissectors ------------------------------------------------------------------------------

local function endpoint(addr, port)
    return tostring(addr) .. "|" .. istr(port)
end

local function env_of(tvb, pinfo)
    local a, b = endpoint(pinfo.src, pinfo.src_port), endpoint(pinfo.dst, pinfo.dst_port)
    return {
        key = istr(pinfo.number) .. ":" .. istr(tvb:offset()),
        flow = a .. ">" .. b,
        conv = a < b and (a .. "=" .. b) or (b .. "=" .. a),
        frame = pinfo.number,
        visited = pinfo.visited,
    }
end

local function top(L, tvb, pinfo, tree)
    local len = tvb:len()
    pinfo.cols.protocol = L.name
    local s = len > 0 and tvb:raw(0, len) or ""
    local env = env_of(tvb, pinfo)
    local ev
    if len < tvb:reported_len() then
        ev = { size = len, bytes = s, status = "truncated", layer = L }
    else
        ev = datagram(L, s, env)
    end
    local info = describe(L, ev)
    if ev.status ~= "ok" and ev.status ~= "malformed" then
        info = ev.status .. (info ~= "" and (SEP .. info) or "")
    end
    if ev.whole then
        info = info .. " [reassembled from " .. #ev.whole.frames .. ": " .. describe(L, ev.whole) .. "]"
    end
    for _, m in ipairs(ev.mdone or {}) do
        info = info .. " [reassembled from " .. #m.frames .. "]"
    end
    pinfo.cols.info = info
    if tree then
        render_event(L, ev, tree, tvb, 0, 0)
    end
    return len
end

-- A heuristic dissector claims what checks as the protocol's: a checksum that holds, or
-- the protocol id where the definition sends it.
local function claims(L, tvb, pinfo)
    local len = tvb:len()
    if len == 0 or len < tvb:reported_len() then
        return false
    end
    local s = tvb:raw(0, len)
    if L.checksum == "crc32" and L.id then
        return article_crc(L, s) == "ok"
    end
    local d = dissect(L, s)
    if L.rule then
        if d.crc_at == nil or d.crc == nil then
            return false
        end
        local stand
        if d.stand_in then
            local env = env_of(tvb, pinfo)
            local learnt = STATE.conv[env.conv]
            stand = learnt and learnt[L.rule.stand_in]
            if not stand then
                return false
            end
        end
        return declared_crc(L, s, d.crc_at, d.crc, stand) == "ok"
    end
    if L.id then
        local c = d.c
        local v = role(c, 7)
        return v ~= nil and not (d.fault and d.fault.kind == "check")
    end
    return false
end

local OUTER = LAYERS[1]
OUTER.proto.dissector = function(tvb, pinfo, tree)
    return top(OUTER, tvb, pinfo, tree)
end
OUTER.proto.init = reset_state
local udp = DissectorTable.get("udp.port")
for _, port in ipairs(OUTER.ports) do
    udp:add(port, OUTER.proto)
end
OUTER.proto.prefs.any_port = Pref.bool("Every UDP port", false,
    "Dissect every UDP datagram as " .. OUTER.name .. ", whatever its ports (gpcap's --any-port)")
local any_port = false
OUTER.proto.prefs_changed = function()
    if OUTER.proto.prefs.any_port ~= any_port then
        any_port = OUTER.proto.prefs.any_port
        if any_port then
            udp:add("1-65535", OUTER.proto)
        else
            udp:remove("1-65535", OUTER.proto)
            for _, port in ipairs(OUTER.ports) do
                udp:add(port, OUTER.proto)
            end
        end
    end
end
if OUTER.heuristic then
    OUTER.proto:register_heuristic("udp", function(tvb, pinfo, tree)
        if not claims(OUTER, tvb, pinfo) then
            return false
        end
        pinfo.conversation = OUTER.proto
        top(OUTER, tvb, pinfo, tree)
        return true
    end)
end
