// The rushgate console: fills the page shell from the admin API and calls it for every control.
// Each page reads the API once a second; the charts are drawn here as SVG, with no library.
'use strict';

(() => {
  const TEXTS = {
    en: {
      console: 'console', admin_key: 'Admin or operator key', sign_in: 'Sign in', sign_out: 'Sign out', overview: 'Overview',
      key_hint: 'The admin key is in rushgate-data/admin.key, printed at the first start; an operator’s key comes from the owner of the admin key.',
      wrong_key: 'That is not the admin key, nor an operator’s.', too_many: 'Too many wrong keys from here: wait a minute, then try again.', expired: 'The form expired; please sign in again.', bad_form: 'The form could not be read.',
      rooms: 'Rooms', drops: 'Drops', auctions: 'Auctions', id: 'ID', state: 'State', waiting: 'Waiting', active: 'Active',
      admitted: 'Admitted', limits: 'Limits', claimed: 'Claimed', remaining: 'Remaining', opens: 'Opens', price: 'Price',
      bids: 'Bids', ends: 'Ends', new_room: 'New room', new_drop: 'New drop', new_auction: 'New auction',
      settings: 'Settings', audit: 'Changes', none: 'None yet.', show_more: 'Show more', save: 'Save', create: 'Create',
      saved: 'Saved.', updated: 'Updated', invite_codes: 'Invite codes, one per line', add_invites: 'Add invite codes',
      invites_added: 'Added {n} new codes. Send each invitee its link: {link}', invites_added_one: 'Added 1 new code. Send the invitee its link: {link}',
      invites_none: 'No new codes: each was added already.', offline: 'Cannot reach rushgate; retrying…',
      paused: 'paused', running: 'admitting', holding: 'holding all', no_joins: 'no new joins', letting_in: 'letting all in', opens_later: 'opens later', drop_closed: 'held: drop closed', drop_scheduled: 'held: sale not open', drop_sold_out: 'sold out: line kept', pause: 'Pause admissions', resume: 'Resume admissions',
      pause_all: 'Pause every room', resume_all: 'Resume every room', confirm_pause_all: 'Press again to pause every room',
      confirm_resume_all: 'Press again to resume every room', paused_all: 'Rooms paused now: {n}.', resumed_all: 'Rooms resumed now: {n}.',
      unreached_all: 'Not reached, as part of the state store does not answer: {ids}.',
      unavailable_list: 'Not shown, as part of the state store does not answer: {ids}.',
      open_now: 'Open now', close_now: 'Close now', end_now: 'End now', extend: 'Extend by', confirm_end: 'Press again to end now', delete: 'Delete', confirm_delete: 'Press again to delete',
      capacity: 'Capacity', rate_admits: 'Admissions per interval', rate_per: 'Interval', session_ttl: 'Session length',
      grace: 'Grace to collect', idle_timeout: 'Idle timeout', opens_at: 'Opens at', site_url: 'Site URL',
      page_message: 'Message to the line (shown at once to everyone waiting)',
      stock: 'Stock', per_visitor: 'Per visitor', closes_at: 'Closes at', room: 'Behind room',
      release_on_claim: 'Release admission on claim', title: 'Title', currency: 'Currency', start_price: 'Start price',
      increment: 'Increment', reserve_price: 'Reserve price', buy_now_price: 'Buy-now price', starts_at: 'Starts at',
      ends_at: 'Ends at', admitted_total: 'Admitted in all', joins_s: 'Joins/s', admissions_s: 'Admissions/s',
      eta_back: 'Wait at the back', claims_s: 'Claims/s', bids_s: 'Bids/s', bidders: 'Bidders', status: 'Status',
      chart_line: 'The line', chart_flow: 'Per second', chart_eta: 'Wait at the back (minutes)', chart_stock: 'Stock',
      kind_operator: 'Operator', recent: 'Recent changes',
      chart_claims: 'Claims per second', chart_price: 'Price', chart_bids: 'Bids per second and bidders',
      idle_s: 'Idle leaves/s', grace_s: 'Uncollected/s', act_create: 'created', act_update: 'changed', act_delete: 'deleted',
      act_open: 'opened now', act_close: 'closed now', act_end: 'ended now', act_extend: 'extended', act_invites: 'invite codes added', act_restore: 'restored from the record',
      scheduled: 'scheduled', open: 'open', closed: 'closed', sold_out: 'sold out', sold: 'sold',
      health_store: 'The state store does not answer: requests fail until it is back.',
      health_store_full: 'The state store refuses writes (full, or unable to persist): joins, claims and bids fail until it has room.',
      health_replicas: 'The state store’s replicas do not confirm writes in time: claims and bids are made but answered “retry” until they do. Joins go on.',
      health_store_part: 'Part of the state store does not answer: the rooms, drops and auctions whose data it holds fail until it is back, and the others go on.', health_store_part_nodes: 'Redis: {nodes}.',
      health_record: 'The durable record fails writes: claims and bids are refused until it takes them again.',
      health_record_outbox: 'The durable record fails writes: claims and bids go on, and wait in Redis until it takes them again.',
      health_waiting: '{claims} claims and {events} auction events wait.',
      health_evicting: 'Redis may delete rushgate’s data once it is full, since its maxmemory-policy evicts keys: places in line, claims and bids would vanish without a word. Set maxmemory-policy to noeviction.', health_evicting_nodes: 'Nodes: {nodes}.',
      health_unlogged: 'Redis keeps no append-only file on {nodes}: a restart of it loses the places in line since its last snapshot, and the claims and bids not yet in the record. Set appendonly yes, unless replicas keep them.',
      no_data: 'Collecting samples…', label_paused: 'Paused', label_mode: 'Mode', mode_fifo: 'A line, first come first served', mode_passthrough: 'Let everyone in', mode_reject: 'No new joins', mode_queue_all: 'Everyone waits until the opening', label_drop: 'Follows the stock of drop', kind_room: 'Room', kind_drop: 'Drop', kind_auction: 'Auction', label_release_on_claim: 'Release admission on claim', label_message: 'Message on the page',
      label_entry: 'Entry', entry_open: 'Open to everybody', entry_invite: 'By invitation only',
      label_identity: 'Who may take part', identity_any: 'Anybody (per visitor token)', identity_site: 'Customers your site signed in',
      identity_room: 'Visitors the room admitted', soft_window: 'Soft close: bids in the last', soft_extend: 'extend the end by',
      local_time: 'your time, {zone}', export_claims: 'Download the claims (CSV)', visitor_page: 'The visitors’ page',
      leader: 'Leading bidder', winner: 'Winner', reserve: 'Reserve', older: 'Older changes', reserve_yes: 'met', reserve_no: 'not met', export_events: 'Download the auction’s history (CSV)',
      id_rule: 'An ID is 1-64 characters of A-Z, a-z, 0-9, _ and -.',
      err_drop_started: 'This drop has claims: only its title, message, stock, times and claims per visitor can change, and it cannot be deleted.',
      err_drop_followed: 'Room {room} follows this drop\'s stock: set that room\'s drop to none, or delete the room, first.',
      fixed_note: 'Claims were made under this drop’s rules: only its title, message, stock, times and claims per visitor can change now. Its stock may go up, or down to the units claimed, until it sells out; the claims per visitor may go up, not down; its message reaches the open pages, also once it is sold out.',
      err_auction_started: 'This auction has bids: only its title and message can change, and it cannot be deleted.',
      fixed_note_auction: 'Bids were made under this auction’s terms: only its title and its message to the bidders can change now, also after it ends.',
      err_auction_closed: 'The auction has ended.', err_not_found: 'It no longer exists.',
      err_store_unavailable: 'The state store does not answer; try again in a moment.',
      find_claim: 'Find a claim by its code', code_label: 'A code a customer presents', find: 'Find',
      code_empty: 'Type a code first.', code_found: 'Claim #{seq}, by visitor {visitor}, at {at}.',
      code_unused: 'Not used yet.', code_used: 'Used at {at}.', code_used_order: 'Used at {at}, for order {order}.',
      followed_by: 'Followed by room', room_missing: 'Room missing: nobody gets in', redeemed: 'Codes used', mark_used: 'Mark as used', confirm_mark_used: 'Press again to mark it used', marked_used: 'Marked as used.',
      unredeem: 'Make usable again', confirm_unredeem: 'Press again: the order was cancelled', unredeemed: 'The code can be used again.',
      err_code_redeemed: 'This code was used already.',
      err_code_not_found: 'No claim of this drop has this code.',
      err_body_too_large: 'Too large: a drop’s settings, codes included, may be up to 4 MiB; anything else up to 64 KiB.',
      webhooks: 'Webhooks', webhooks_to: 'How each auction and drop ended is sent to {url}; the latest first:', wh_event: 'Event', wh_attempts: 'Attempts', wh_detail: 'Detail',
      wh_pending: 'to send', wh_delivered: 'delivered', wh_failed: 'given up', wh_auction_ended: 'auction ended', wh_drop_ended: 'drop ended',
      wh_sent_at: 'Taken at {at}.', wh_next: 'Next try at {at}.', wh_last_error: 'Last refused: {error}', wh_never: 'Not sent yet.',
      wh_send_now: 'Send now', wh_sending: 'Sending it now.', site_told: 'Site told', wh_none: 'not yet', wh_ping: 'test event', wh_ping_send: 'Send a test event',
      wh_ping_sent: 'A test event is on its way: its line below says whether the site took it.',
      signed_in_as: 'Signed in as', role_owner: 'owner', role_editor: 'editor', role_viewer: 'viewer', unavailable: 'The keys cannot be read now; try again in a moment.',
      operators: 'Operators', operators_about: 'Give each person who runs the sale a key of their own: the changes log says who made each change, and a key taken back stops at once. An editor changes everything but operators and backups; a viewer only looks.',
      op_expires: 'Until', op_life: 'The key works', life_ever: 'until taken back', life_day: 'for a day', life_week: 'for a week',
      life_month: 'for 30 days', op_expired: 'expired', op_name: 'Name', op_role: 'Role', op_created: 'Since', new_operator: 'New operator', op_none: 'No operators yet: only the admin key signs in.',
      operator_key: 'The key of {name}, shown this once: hand it over now. {key}', operator_removed: 'The key of {name} no longer signs in.',
      err_operator_exists: 'An operator has this name: delete it first to hand out a new key.',
      op_name_rule: 'A name is 1-64 characters of A-Z, a-z, 0-9, _ and -, and not “admin”.',
      err_forbidden: 'Your role may not do this.', by: 'by {name}', by_rushgate: 'by rushgate',
      backup: 'Backup', backup_download: 'Download a backup',
      backup_kept: 'Kept every {every} in {dir}: {count} now, the newest {name} ({size}), taken {at}.',
      backup_kept_none: 'Kept every {every} in {dir}: none yet.',
      backup_unscheduled: 'Not kept on a schedule: start rushgate with --backup-dir to have it keep one every day.',
      backup_failed: 'The last backup failed, {at}: {error}',
      backup_sealed: 'Every backup is sealed to the keys of --backup-recipient: only their identities restore it (rushgate restore --identity).',
      backup_about: 'A copy of what this rushgate keeps in its data directory (on the embedded backend all of it: the record, the lines, the signing keys and secrets), taken while it runs. Keep it as secret as the admin key. To restore it, run rushgate restore --data DIR with the file, into a new directory, and start rushgate with --data DIR.',
    },
    ko: {
      console: '콘솔', admin_key: '관리자 또는 운영자 키', sign_in: '로그인', sign_out: '로그아웃', overview: '개요',
      key_hint: '관리자 키는 rushgate-data/admin.key에 있으며 처음 시작할 때 출력됩니다. 운영자 키는 관리자 키 소유자에게 받습니다.',
      wrong_key: '관리자 키도, 운영자 키도 아닙니다.', too_many: '잘못된 키가 너무 많이 입력되었습니다. 1분 뒤에 다시 시도하세요.', expired: '양식이 만료되었습니다. 다시 로그인하세요.', bad_form: '양식을 읽을 수 없습니다.',
      rooms: '대기실', drops: '드롭', auctions: '경매', id: 'ID', state: '상태', waiting: '대기 중', active: '현재 입장',
      admitted: '누적 입장', limits: '제한', claimed: '수령', remaining: '남은 수량', opens: '오픈', price: '가격',
      bids: '입찰', ends: '종료', new_room: '새 대기실', new_drop: '새 드롭', new_auction: '새 경매',
      settings: '설정', audit: '변경 기록', none: '아직 없습니다.', show_more: '더 보기', save: '저장', create: '만들기',
      saved: '저장했습니다.', updated: '갱신', invite_codes: '초대 코드 (한 줄에 하나)', add_invites: '초대 코드 추가',
      invites_added: '새 코드 {n}개를 추가했습니다. 초대받은 분께 각자의 링크를 보내세요: {link}', invites_added_one: '새 코드 1개를 추가했습니다. 초대받은 분께 링크를 보내세요: {link}',
      invites_none: '새 코드가 없습니다. 모두 이미 추가된 코드입니다.', offline: 'rushgate에 연결할 수 없습니다. 다시 시도하는 중…',
      paused: '일시 정지', running: '입장 중', holding: '전원 대기', no_joins: '신규 차단', letting_in: '전원 입장', opens_later: '오픈 전', drop_closed: '보류: 판매 마감', drop_scheduled: '보류: 판매 전', drop_sold_out: '품절: 대기열 유지', pause: '입장 일시 정지', resume: '입장 재개',
      pause_all: '모든 대기실 입장 정지', resume_all: '모든 대기실 입장 재개', confirm_pause_all: '한 번 더 누르면 모든 대기실의 입장을 정지합니다',
      confirm_resume_all: '한 번 더 누르면 모든 대기실의 입장을 재개합니다', paused_all: '대기실 {n}곳의 입장을 정지했습니다.', resumed_all: '대기실 {n}곳의 입장을 재개했습니다.',
      unreached_all: '상태 저장소의 일부가 응답하지 않아 바꾸지 못했습니다: {ids}.',
      unavailable_list: '상태 저장소의 일부가 응답하지 않아 보이지 않습니다: {ids}.',
      open_now: '지금 열기', close_now: '지금 닫기', end_now: '지금 종료', extend: '연장', confirm_end: '한 번 더 누르면 지금 종료합니다', delete: '삭제', confirm_delete: '한 번 더 누르면 삭제합니다',
      capacity: '동시 입장 수', rate_admits: '구간당 입장 수', rate_per: '구간', session_ttl: '세션 길이',
      grace: '입장 확인 유예', idle_timeout: '유휴 제한 시간', opens_at: '오픈 시각', site_url: '사이트 URL',
      page_message: '대기열 안내 메시지 (기다리는 모두에게 바로 표시)',
      stock: '재고', per_visitor: '1인당 수량', closes_at: '마감 시각', room: '연결된 대기실',
      release_on_claim: '수령 시 입장 해제', title: '제목', currency: '통화', start_price: '시작가',
      increment: '입찰 단위', reserve_price: '최저 낙찰가', buy_now_price: '즉시 구매가', starts_at: '시작 시각',
      ends_at: '종료 시각', admitted_total: '누적 입장', joins_s: '초당 합류', admissions_s: '초당 입장',
      eta_back: '맨 뒤 대기 시간', claims_s: '초당 수령', bids_s: '초당 입찰', bidders: '입찰자', status: '상태',
      chart_line: '대기열', chart_flow: '초당 흐름', chart_eta: '맨 뒤 대기 시간 (분)', chart_stock: '재고',
      kind_operator: '운영자 키', recent: '최근 변경 기록',
      chart_claims: '초당 수령', chart_price: '가격', chart_bids: '초당 입찰과 입찰자',
      idle_s: '초당 유휴 이탈', grace_s: '초당 미확인 만료', act_create: '생성됨', act_update: '변경됨', act_delete: '삭제됨',
      act_open: '즉시 열림', act_close: '즉시 마감됨', act_end: '즉시 종료됨', act_extend: '연장됨', act_invites: '초대 코드 추가됨', act_restore: '기록에서 복원됨',
      scheduled: '예정', open: '진행 중', closed: '마감', sold_out: '품절', sold: '판매됨',
      health_store: '상태 저장소가 응답하지 않습니다. 복구될 때까지 요청이 실패합니다.',
      health_store_full: '상태 저장소가 쓰기를 거부합니다 (가득 찼거나 저장할 수 없음). 공간이 생길 때까지 입장, 수령, 입찰이 실패합니다.',
      health_replicas: '상태 저장소의 복제본이 제때 쓰기를 확인하지 않습니다. 확인될 때까지 수령과 입찰은 이루어지지만 “다시 시도” 응답을 받습니다. 입장은 계속됩니다.',
      health_store_part: '상태 저장소의 일부가 응답하지 않습니다. 그 부분에 데이터가 있는 대기실, 드롭, 경매는 복구될 때까지 실패하고, 나머지는 계속됩니다.', health_store_part_nodes: 'Redis: {nodes}.',
      health_record: '영구 기록에 쓰지 못하고 있습니다. 다시 쓸 수 있을 때까지 수령과 입찰을 받지 않습니다.',
      health_record_outbox: '영구 기록에 쓰지 못하고 있습니다. 수령과 입찰은 계속되며, 다시 쓸 수 있을 때까지 Redis에서 기다립니다.',
      health_waiting: '수령 {claims}건과 경매 기록 {events}건이 기다리고 있습니다.',
      health_evicting: 'Redis의 maxmemory-policy가 키를 지우는 정책이라, 가득 차면 rushgate의 데이터를 지울 수 있습니다. 대기 순번, 수령과 입찰이 말없이 사라질 수 있으니 maxmemory-policy를 noeviction으로 설정하세요.', health_evicting_nodes: '해당 노드: {nodes}.',
      health_unlogged: 'Redis가 {nodes}에서 AOF(append-only file)를 쓰지 않습니다. 재시작하면 마지막 스냅숏 이후의 대기 순번과, 아직 기록되지 않은 수령과 입찰을 잃습니다. 복제본이 지켜 주지 않는다면 appendonly yes로 설정하세요.',
      no_data: '표본을 모으는 중…', label_paused: '일시 정지됨', label_mode: '모드', mode_fifo: '선착순 대기열', mode_passthrough: '모두 바로 입장', mode_reject: '새 합류 받지 않음', mode_queue_all: '오픈까지 모두 대기', label_drop: '재고를 따르는 드롭', kind_room: '대기실', kind_drop: '드롭', kind_auction: '경매', label_release_on_claim: '수령 시 입장 해제', label_message: '페이지에 띄울 메시지',
      label_entry: '입장 방식', entry_open: '누구나', entry_invite: '초대받은 사람만',
      label_identity: '참여할 수 있는 사람', identity_any: '누구나 (방문자 토큰마다)', identity_site: '사이트에 로그인한 고객',
      identity_room: '대기실이 입장시킨 방문자', soft_window: '연장 마감: 마지막 구간의 입찰은', soft_extend: '종료를 이만큼 연장',
      local_time: '현지 시각, {zone}', export_claims: '수령 목록 내려받기 (CSV)', visitor_page: '방문자 페이지',
      leader: '최고 입찰자', winner: '낙찰자', reserve: '최저 낙찰가', older: '이전 변경 기록', reserve_yes: '도달', reserve_no: '미달', export_events: '경매 기록 내려받기 (CSV)',
      id_rule: 'ID는 A-Z, a-z, 0-9, _, -로 된 1-64자여야 합니다.',
      err_drop_started: '수령이 있는 드롭은 제목, 메시지, 재고, 시각, 1인당 수량만 바꿀 수 있고 지울 수 없습니다.',
      err_drop_followed: '대기실 {room}이(가) 이 드롭의 재고를 따르고 있습니다. 먼저 그 대기실의 드롭을 비우거나 대기실을 지우세요.',
      fixed_note: '이 드롭의 규칙으로 이미 수령이 이루어졌습니다. 이제 제목, 메시지, 재고, 시각, 1인당 수량만 바꿀 수 있습니다. 재고는 매진되기 전까지 늘리거나 수령된 수량까지 줄일 수 있고, 1인당 수량은 늘릴 수만 있으며, 메시지는 매진된 뒤에도 열린 페이지에 전해집니다.',
      err_auction_started: '입찰이 있는 경매는 제목과 메시지만 바꿀 수 있고 지울 수 없습니다.',
      fixed_note_auction: '이 경매의 조건으로 이미 입찰이 이루어졌습니다. 이제 제목과 입찰자에게 보이는 메시지만 바꿀 수 있으며, 종료 후에도 바꿀 수 있습니다.',
      err_auction_closed: '경매가 끝났습니다.', err_not_found: '더 이상 없습니다.',
      err_store_unavailable: '상태 저장소가 응답하지 않습니다. 잠시 후 다시 시도하세요.',
      find_claim: '코드로 수령 찾기', code_label: '고객이 제시한 코드', find: '찾기',
      code_empty: '먼저 코드를 입력하세요.', code_found: '#{seq}번 수령: 방문자 {visitor}, {at}.',
      code_unused: '아직 사용되지 않았습니다.', code_used: '{at}에 사용되었습니다.', code_used_order: '{at}, 주문 {order}에 사용되었습니다.',
      followed_by: '재고를 따르는 대기실', room_missing: '대기실 없음: 입장 불가', redeemed: '사용된 코드', mark_used: '사용 처리', confirm_mark_used: '한 번 더 누르면 사용 처리합니다', marked_used: '사용 처리했습니다.',
      unredeem: '다시 사용 가능하게', confirm_unredeem: '한 번 더 누르세요: 주문이 취소되었습니다', unredeemed: '코드를 다시 사용할 수 있습니다.',
      err_code_redeemed: '이미 사용된 코드입니다.',
      err_code_not_found: '이 드롭에서 이 코드를 받은 수령이 없습니다.',
      err_body_too_large: '너무 큽니다. 드롭 설정은 코드를 포함해 4 MiB까지, 그 밖의 것은 64 KiB까지입니다.',
      webhooks: '웹훅', webhooks_to: '경매와 드롭의 결과를 {url}(으)로 보냅니다. 최근 것부터:', wh_event: '이벤트', wh_attempts: '시도', wh_detail: '내용',
      wh_pending: '전송 대기', wh_delivered: '전달됨', wh_failed: '포기함', wh_auction_ended: '경매 종료', wh_drop_ended: '드롭 종료',
      wh_sent_at: '{at}에 전달되었습니다.', wh_next: '다음 시도: {at}.', wh_last_error: '마지막 거부: {error}', wh_never: '아직 보내지 않았습니다.',
      wh_send_now: '지금 보내기', wh_sending: '지금 보냅니다.', site_told: '사이트 통보', wh_none: '아직 없음', wh_ping: '테스트 이벤트', wh_ping_send: '테스트 이벤트 보내기',
      wh_ping_sent: '테스트 이벤트를 보냈습니다. 사이트가 받았는지는 아래 목록에 나옵니다.',
      signed_in_as: '로그인:', role_owner: '소유자', role_editor: '편집자', role_viewer: '조회자', unavailable: '지금은 키를 읽을 수 없습니다. 잠시 후 다시 시도하세요.',
      operators: '운영자', operators_about: '판매를 운영하는 사람마다 각자의 키를 주세요. 변경 기록에 누가 바꿨는지 남고, 회수한 키는 즉시 막힙니다. 편집자는 운영자와 백업 외의 모든 것을 바꿀 수 있고, 조회자는 보기만 합니다.',
      op_expires: '만료', op_life: '키 사용 기간', life_ever: '회수할 때까지', life_day: '하루', life_week: '일주일',
      life_month: '30일', op_expired: '만료됨', op_name: '이름', op_role: '역할', op_created: '만든 때', new_operator: '새 운영자', op_none: '아직 운영자가 없습니다. 관리자 키로만 로그인합니다.',
      operator_key: '{name}의 키입니다. 지금 한 번만 보여 주니 바로 전달하세요. {key}', operator_removed: '{name}의 키로는 더 이상 로그인할 수 없습니다.',
      err_operator_exists: '같은 이름의 운영자가 있습니다. 새 키를 주려면 먼저 삭제하세요.',
      op_name_rule: '이름은 A-Z, a-z, 0-9, _, -로 된 1-64자이며 “admin”은 쓸 수 없습니다.',
      err_forbidden: '이 역할로는 할 수 없습니다.', by: '작업자 {name}', by_rushgate: '작업자 rushgate',
      backup: '백업', backup_download: '백업 내려받기',
      backup_kept: '{dir}에 {every}마다 보관합니다: 지금 {count}개, 가장 최근 것은 {name}({size}), {at}에 만들었습니다.',
      backup_kept_none: '{dir}에 {every}마다 보관합니다: 아직 없습니다.',
      backup_unscheduled: '정해진 주기로 보관하지 않습니다: --backup-dir로 rushgate를 시작하면 매일 하나씩 보관합니다.',
      backup_failed: '마지막 백업이 실패했습니다({at}): {error}',
      backup_sealed: '모든 백업은 --backup-recipient의 키로 암호화됩니다: 그 키의 비밀 키로만 복원할 수 있습니다(rushgate restore --identity).',
      backup_about: '이 rushgate가 데이터 디렉터리에 보관하는 것(내장 백엔드라면 전부: 기록, 대기열, 서명 키와 비밀값)의 사본으로, 멈추지 않고 만듭니다. 관리자 키처럼 비밀로 보관하세요. 복원하려면 이 파일로 rushgate restore --data DIR을 새 디렉터리에 실행한 뒤 --data DIR로 rushgate를 시작하세요.',
    },
  };

  const lang = (() => {
    const q = new URLSearchParams(location.search).get('lang');
    if (q && TEXTS[q]) {
      try { localStorage.setItem('rg-console-lang', q); } catch (_) { /* private mode */ }
      return q;
    }
    let saved = null;
    try { saved = localStorage.getItem('rg-console-lang'); } catch (_) { /* private mode */ }
    if (saved && TEXTS[saved]) return saved;
    return (navigator.language || '').toLowerCase().startsWith('ko') ? 'ko' : 'en';
  })();
  // t is a text in the page's language, its {placeholders} filled from args, as the visitors' pages do.
  const t = (k, args) => (TEXTS[lang][k] || TEXTS.en[k] || k).replace(/\{(\w+)\}/g, (m, n) => (args && n in args ? args[n] : m));
  document.documentElement.lang = lang;
  document.querySelectorAll('[data-t]').forEach((el) => { el.textContent = t(el.dataset.t); });

  const body = document.body;
  if (body.dataset.page === 'login') {
    const err = body.dataset.error;
    if (err) {
      const p = document.getElementById('login-error');
      p.textContent = t(err);
      p.hidden = false;
    }
    return;
  }

  const page = body.dataset.page;
  const id = body.dataset.id;
  const csrf = body.dataset.csrf;
  const base = body.dataset.base || ''; // the path rushgate is served under, '' at the root
  const viewer = body.dataset.role === 'viewer'; // reads only: the page shows no control
  const status = document.getElementById('status');

  // h builds an element: h('td', {class: 'x'}, 'text', child...).
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') el.textContent = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : v);
    }
    for (const kid of kids) if (kid !== null && kid !== undefined) el.append(kid);
    return el;
  }

  async function api(method, path, data) {
    const opts = { method, headers: { 'Rushgate-CSRF': csrf }, credentials: 'same-origin' };
    if (data !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(data);
    }
    const res = await fetch(base + path, opts);
    let json = null;
    try { json = await res.json(); } catch (_) { /* not JSON */ }
    if (res.status === 401) {
      location.reload(); // the session ended: the page becomes the sign-in form
    }
    if (!res.ok) {
      const e = new Error((json && json.error && json.error.message) || res.statusText);
      e.code = json && json.error && json.error.code;
      e.field = json && json.error && json.error.field;
      e.room = json && json.error && json.error.room;
      throw e;
    }
    return json;
  }

  const fmtTime = (s) => (s ? new Date(s).toLocaleString(lang) : '–');
  const fmtNum = (n) => (typeof n === 'number' ? n.toLocaleString(lang, { maximumFractionDigits: 1 }) : '–');
  // fmtMoney shows an amount, which the API keeps in minor units (cents), as its currency writes it.
  function fmtMoney(n, code) {
    try {
      const f = new Intl.NumberFormat(lang, { style: 'currency', currency: code });
      return f.format(n / 10 ** f.resolvedOptions().maximumFractionDigits);
    } catch (_) {
      return fmtNum(n) + ' ' + code;
    }
  }
  // fmtWait shows a wait in its largest whole unit, in the page's language ("42s", "42초").
  function fmtWait(secs) {
    if (!secs) return '–';
    const [v, unit] = secs < 60 ? [Math.round(secs), 'second'] : secs < 3600 ? [Math.round(secs / 60), 'minute'] : [secs / 3600, 'hour'];
    return v.toLocaleString(lang, { style: 'unit', unit, unitDisplay: 'narrow', maximumFractionDigits: 1 });
  }
  const badge = (state) => h('span', { class: 'badge ' + state, text: t(state) });

  // roomState is what a room does with its line now, as its config says: 'admitting' was all a room
  // that admits nobody (before its opening, or queueing all with none set) showed besides 'paused'.
  // dropStatus is the status of the drop the room follows, when known: closed or not open yet, it
  // holds the line; sold out, it turns new visitors away and keeps the line for a second batch.
  function roomState(cfg, dropStatus) {
    if (cfg.paused) return 'paused';
    if (cfg.drop && dropStatus === 'sold_out') return 'drop_sold_out';
    if (cfg.drop && dropStatus === 'closed') return 'drop_closed';
    if (cfg.drop && dropStatus === 'scheduled') return 'drop_scheduled';
    if (cfg.mode === 'queue_all' && !cfg.opens_at) return 'holding';
    if (cfg.opens_at && Date.parse(cfg.opens_at) > Date.now()) return 'opens_later';
    if (cfg.mode === 'reject') return 'no_joins';
    if (cfg.mode === 'passthrough') return 'letting_in';
    return 'running';
  }

  // ---- Forms: one spec per kind; the API's refusal is shown next to the field it names. ----
  const FIELDS = {
    room: [['capacity', 'number'], ['rate_admits', 'number', 'rate'], ['rate_per', 'text', 'rate'], ['session_ttl', 'text'],
      ['grace', 'text'], ['idle_timeout', 'text'], ['opens_at', 'datetime-local'], ['site_url', 'text'], ['mode', 'select'], ['entry', 'select'], ['drop', 'text', 'drop'], ['paused', 'checkbox'],
      ['page_message', 'textarea', 'page']],
    drop: [['title', 'text'], ['stock', 'number'], ['per_visitor', 'number'], ['opens_at', 'datetime-local'], ['closes_at', 'datetime-local'], ['room', 'text'],
      ['identity', 'select'], ['release_on_claim', 'checkbox'], ['message', 'textarea']],
    // An increment is an amount or tiers, [{"from": 0, "step": 100}, ...]: a number input would show
    // tiers as empty, and a save would send the auction without them.
    auction: [['title', 'text'], ['currency', 'text'], ['start_price', 'number'], ['increment', 'text'],
      ['reserve_price', 'number'], ['buy_now_price', 'number'], ['starts_at', 'datetime-local'], ['ends_at', 'datetime-local'], ['room', 'text'],
      ['identity', 'select'], ['soft_window', 'text', 'soft_close'], ['soft_extend', 'text', 'soft_close'], ['message', 'textarea']],
  };
  const PLACEHOLDERS = { rate_per: '1m', session_ttl: '10m', grace: '60s', idle_timeout: '2m', currency: 'KRW', soft_window: '2m',
    soft_extend: '2m' };
  // The choices of a select, its default first.
  const CHOICES = { mode: ['fifo', 'passthrough', 'reject', 'queue_all'], entry: ['open', 'invite'], identity: ['any', 'site', 'room'] };
  const PATHS = { room: '/v1/rooms/', drop: '/v1/drops/', auction: '/v1/auctions/' };

  // Times are edited in the operator's own time zone, which the label names, and sent as UTC
  // instants: an opening typed as 20:00 in Seoul is 11:00Z, never 20:00Z.
  const pad = (n) => String(n).padStart(2, '0');
  const zone = (() => {
    const off = -new Date().getTimezoneOffset();
    const utc = 'UTC' + (off < 0 ? '-' : '+') + pad(Math.floor(Math.abs(off) / 60)) + ':' + pad(Math.abs(off) % 60);
    const name = Intl.DateTimeFormat().resolvedOptions().timeZone;
    return name && name !== 'UTC' ? name + ', ' + utc : utc;
  })();
  const TIMES = new Set(['opens_at', 'closes_at', 'starts_at', 'ends_at', 'created_at', 'expires_at']);
  // change shows a value of the audit log: times as the form shows them, the rest as JSON.
  const change = (field, v) => (TIMES.has(field) && typeof v === 'string' ? fmtTime(v) : JSON.stringify(v));
  // localTime is an RFC 3339 instant as a datetime-local input shows it, to the second.
  function localTime(s) {
    const d = new Date(s);
    if (Number.isNaN(d.getTime())) return '';
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' + pad(d.getHours()) + ':' +
      pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  // An amount is typed as the API keeps it, in minor units (cents); the line under it says what that is
  // in its currency: 1050 in EUR is €10.50, 31000 in KRW is ₩31,000.
  const MONEY = new Set(['start_price', 'reserve_price', 'buy_now_price']);
  function moneyHints(form) {
    const code = ((form.querySelector('[name=currency]') || {}).value || '').trim().toUpperCase();
    form.querySelectorAll('[data-money]').forEach((p) => {
      const v = Number(form.querySelector('[name=' + p.dataset.money + ']').value);
      p.textContent = /^[A-Z]{3}$/.test(code) && Number.isInteger(v) && v > 0 ? '= ' + fmtMoney(v, code) : '';
    });
  }

  function buildForm(form) {
    const kind = form.dataset.kind;
    const create = form.dataset.create === '1';
    const fields = (create ? [['id', 'text']] : []).concat(FIELDS[kind]);
    const prefix = (create ? 'new-' : 'edit-') + kind + '-';
    form.append(h('p', { class: 'error wide', 'data-err': '', role: 'alert' }));
    for (const [name, type, errKey] of fields) {
      const attrs = { id: prefix + name, name, 'data-errkey': errKey || name,
        'aria-describedby': prefix + name + '-err' + (MONEY.has(name) ? ' ' + prefix + name + '-money' : '') };
      const input = type === 'select'
        ? h('select', attrs, ...CHOICES[name].map((v) => h('option', { value: v, text: t(name + '_' + v) })))
        : type === 'textarea' ? h('textarea', Object.assign(attrs, { rows: 2, maxlength: '2000' }))
        : h('input', Object.assign(attrs, { type, step: type === 'number' ? 'any' : type === 'datetime-local' ? '1' : null,
          placeholder: PLACEHOLDERS[name], required: create && name === 'id' },
          // An id the API would refuse is refused here, with the rule: the form is not sent.
          name === 'id' ? { pattern: '[A-Za-z0-9_\\-]{1,64}', maxlength: '64', title: t('id_rule') } : {}));
      let label = name === 'id' ? 'ID' : t(TEXTS.en['label_' + name] ? 'label_' + name : name);
      if (type === 'datetime-local') label += ' (' + t('local_time', { zone }) + ')';
      form.append(h('div', { class: type === 'textarea' ? 'field wide' : 'field' }, h('label', { for: prefix + name, text: label }), input,
        MONEY.has(name) ? h('p', { class: 'hint', id: prefix + name + '-money', 'data-money': name }) : null,
        h('p', { class: 'error', id: prefix + name + '-err', 'data-err': errKey || name })));
    }
    form.append(h('div', { class: 'wide' }, h('button', { class: 'primary', type: 'submit', text: t(create ? 'create' : 'save') })));
    if (viewer) form.querySelectorAll('input, select, textarea').forEach((i) => { i.disabled = true; }); // shown, not edited
    form.addEventListener('input', () => {
      form.dataset.dirty = '1';
      form.dataset.edits = String(Number(form.dataset.edits || 0) + 1); // see submit
      moneyHints(form);
    });
    form.addEventListener('submit', (ev) => { ev.preventDefault(); submit(form, kind, create); });
  }

  function fill(form, cfg) {
    const v = Object.assign({}, cfg);
    if (cfg.rate) { v.rate_admits = cfg.rate.admits; v.rate_per = cfg.rate.per; }
    v.page_message = cfg.page ? cfg.page.message : undefined;
    if (cfg.soft_close) { v.soft_window = cfg.soft_close.window; v.soft_extend = cfg.soft_close.extend; }
    if (typeof cfg.increment === 'object') v.increment = JSON.stringify(cfg.increment);
    for (const input of form.querySelectorAll('[name]')) {
      const x = v[input.name];
      if (input.type === 'checkbox') input.checked = !!x;
      else if (input.type === 'datetime-local' || input.tagName === 'SELECT') {
        // A time shows whole seconds, and a choice shows the default ("" is fifo) by its name: an
        // unchanged field sends back what it was filled with, which the audit log lists as no change.
        input.value = input.type === 'datetime-local' ? (x ? localTime(x) : '') : x || CHOICES[input.name][0];
        input.dataset.filled = input.value;
        input.dataset.read = JSON.stringify(x === undefined ? null : x);
      } else input.value = x === undefined || x === null ? '' : String(x);
    }
    markSaid(form, v.page_message);
    moneyHints(form);
  }

  // markSaid notes whether the room now has a message, as read or as just saved: a message taken away
  // is sent as null, and with none there before no page is sent (no empty page made).
  function markSaid(form, message) {
    const said = form.querySelector('[name=page_message]');
    if (said) said.dataset.had = message ? '1' : '';
  }

  // value reads an input: a number when it reads as one, the text as typed otherwise (so that the API
  // names the field it refuses), undefined when empty.
  function value(input) {
    if (input.type === 'checkbox') return input.checked;
    if (input.dataset.filled !== undefined && input.value === input.dataset.filled) return JSON.parse(input.dataset.read) ?? undefined;
    if (input.type === 'datetime-local') return input.value === '' ? undefined : new Date(input.value).toISOString().replace('.000Z', 'Z');
    if (input.tagName === 'SELECT' && input.form.dataset.create === '1' && input.value === CHOICES[input.name][0]) return undefined; // the default
    const s = input.value.trim();
    if (s === '') return undefined;
    if (input.type === 'number' || input.name === 'increment') {
      const n = Number(s);
      if (!Number.isNaN(n)) return n;
      try { return JSON.parse(s); } catch (_) { return s; }
    }
    return s;
  }

  function formConfig(form, kind, base) {
    const out = Object.assign({}, base || {});
    const read = {};
    for (const input of form.querySelectorAll('[name]')) read[input.name] = value(input);
    delete read.id;
    if (kind === 'room') {
      out.rate = read.rate_admits !== undefined || read.rate_per !== undefined ? { admits: read.rate_admits, per: read.rate_per } : null;
      delete read.rate_admits;
      delete read.rate_per;
      // The page's message alone: a PATCH merges it into the page, whose title and logo stay.
      const had = form.querySelector('[name=page_message]').dataset.had === '1';
      if (read.page_message !== undefined || had) out.page = { message: read.page_message === undefined ? null : read.page_message };
      delete read.page_message;
    }
    if (kind === 'auction') {
      out.soft_close = read.soft_window !== undefined || read.soft_extend !== undefined ? { window: read.soft_window, extend: read.soft_extend } : null;
      delete read.soft_window;
      delete read.soft_extend;
    }
    for (const [k, v] of Object.entries(read)) out[k] = v === undefined ? null : v;
    return out;
  }

  function clearErrors(form) {
    form.querySelectorAll('[data-err]').forEach((p) => { p.textContent = ''; });
    form.querySelectorAll('[aria-invalid]').forEach((i) => i.removeAttribute('aria-invalid'));
  }

  // REASONS_KO say in Korean why the API refused a config: each pattern is tried on the reason (its
  // message after "room config: field: "), and a reason none matches is shown as the API words it.
  // TestRefusalsInKorean holds every refusal of a config to a pattern here.
  const REASONS_KO = [
    [/^must be between 0 and (\d+) leading zero bits$/, '0에서 $1 사이의 비트 수여야 합니다'],
    [/^must be between 1 and (\d+) minor units$/, '1에서 $1 (최소 화폐 단위) 사이여야 합니다'],
    [/^must be between 1 and the stock$/, '1에서 재고 수량 사이여야 합니다'],
    [/^must be between (\S+) and (\S+)$/, '$1에서 $2 사이여야 합니다'],
    [/^must be "#rrggbb"$/, '"#rrggbb" 형식이어야 합니다'],
    [/^must be ("[^"]+"(?:, "[^"]+")*) or ("[^"]+")$/, '$1, $2 중 하나여야 합니다'],
    [/^must be an RFC 3339 time from (\d+) to (\d+)$/, '$1년에서 $2년 사이의 RFC 3339 시각이어야 합니다'],
    [/^must be an absolute http or https URL$/, 'http 또는 https로 시작하는 절대 URL이어야 합니다'],
    [/^must be an ISO 4217 code such as (\w+)$/, '$1 같은 ISO 4217 통화 코드여야 합니다'],
    [/^must be at least the start price and at most (\d+)$/, '시작가 이상, $1 이하여야 합니다'],
    [/^must be above the start price, at least the reserve and at most (\d+)$/, '시작가보다 크고, 최저 낙찰가 이상, $1 이하여야 합니다'],
    [/^must be after (\w+)$/, '$1 이후여야 합니다'],
    [/^must be 1-(\d+) bytes$/, '1-$1바이트여야 합니다'],
    [/^at most (\d+) bytes$/, '$1바이트 이하여야 합니다'],
    [/^at most (\d+) codes$/, '코드는 $1개 이하여야 합니다'],
    [/^codes are 1-(\d+) bytes$/, '코드는 1-$1바이트여야 합니다'],
    [/^codes must be distinct and 1-(\d+) bytes$/, '코드는 서로 달라야 하고 1-$1바이트여야 합니다'],
    [/^fewer codes than stock$/, '코드가 재고 수량보다 적습니다'],
    [/^a language code such as "(\w+)" or "(\w+)"$/, '"$1"나 "$2" 같은 언어 코드여야 합니다'],
    [/^set capacity, rate or both: a room with neither admits everybody at once$/, '동시 입장 수나 입장 속도를 정하세요. 둘 다 없는 대기실은 모두를 한꺼번에 들여보냅니다'],
    [/^not a valid (room|drop) id$/, '올바른 ID가 아닙니다'],
    [/^this server runs no drops$/, '이 서버는 드롭을 운영하지 않습니다'],
    [/^is required$/, '꼭 입력해야 합니다'],
    [/^needs a room$/, '대기실이 있어야 합니다'],
    [/^"room" needs a room$/, '"room"에는 대기실이 있어야 합니다'],
    [/^starts_at and ends_at are required$/, '시작 시각과 종료 시각을 모두 입력해야 합니다'],
    [/^an auction lasts at most a year$/, '경매는 최대 1년 동안 열 수 있습니다'],
    [/^window and extend must be positive durations of at most (\S+)$/, 'window와 extend는 $1 이하의 양의 기간이어야 합니다'],
    [/^needs 1-(\d+) tiers$/, '구간이 1-$1개 있어야 합니다'],
    [/^every step must be at least 1$/, '모든 입찰 단위는 1 이상이어야 합니다'],
    [/^must be at least the units claimed already$/, '이미 수령된 수량 이상이어야 합니다'],
    [/^may go up once the drop has claims, not down$/, '수령이 있는 드롭에서는 늘릴 수만 있고 줄일 수는 없습니다'],
    [/^the drop is sold out: its stock can no longer change$/, '매진된 드롭의 재고는 더 바꿀 수 없습니다'],
    [/^the first tier must start from 0$/, '첫 구간은 0에서 시작해야 합니다'],
    [/^tiers must be in increasing order of from$/, '구간은 from이 커지는 순서여야 합니다'],
    [/^tier bounds must be amounts$/, '구간 경계는 금액이어야 합니다'],
    [/^the record holds (\d+) claims of this drop, more than the stock$/, '기록에 이 드롭의 수령이 $1건 있어 재고 수량보다 많습니다'],
    [/^a patch is one JSON object of the fields to change$/, '바꿀 필드를 담은 JSON 객체 하나여야 합니다'],
    [/^malformed JSON at offset (\d+)$/, 'JSON 형식이 잘못되었습니다 (위치 $1)'],
    [/^malformed JSON: the body ends inside the object$/, 'JSON 객체가 끝나기 전에 본문이 끝났습니다'],
    [/^unexpected data after the JSON object$/, 'JSON 객체 뒤에 다른 내용이 있습니다'],
    [/^is given twice$/, '두 번 들어 있습니다'],
    [/^unknown field$/, '알 수 없는 필드입니다'],
    [/^the body must be a JSON object$/, '본문은 JSON 객체여야 합니다'],
    [/^must be a whole number$/, '정수여야 합니다'],
    [/^must be a number$/, '숫자여야 합니다'],
    [/^must be a string$/, '문자열이어야 합니다'],
    [/^must be true or false$/, 'true나 false여야 합니다'],
    [/^must be a list$/, '목록이어야 합니다'],
    [/^must be an object$/, '객체여야 합니다'],
    [/^must be a duration such as "90s" or "10m"$/, '"90s"나 "10m" 같은 기간이어야 합니다'],
    [/^must be an RFC 3339 time such as "([^"]*)"$/, '"$1" 같은 RFC 3339 시각이어야 합니다'],
    [/^must be an amount or a table (.*)$/, '금액이나 구간 표 $1여야 합니다'],
    [/^empty body$/, '본문이 비어 있습니다'],
  ];

  // refusal is what the console says of the API's refusal, in the page's language: its own words for
  // the refusals an operator meets, and for a config the API's reason, in Korean when the page is.
  function refusal(e) {
    if (e.code === 'invalid_room_id') return t('id_rule');
    const code = !TEXTS.en['err_' + e.code] && /_not_found$/.test(e.code || '') ? 'not_found' : e.code;
    if (TEXTS.en['err_' + code]) return t('err_' + code, e);
    if (lang !== 'ko' || e.code !== 'invalid_config') return e.message;
    let why = e.message.replace(/^(room|drop|auction) config: /, '');
    if (e.field && why.startsWith(e.field + ': ')) why = why.slice(e.field.length + 2);
    for (const [pattern, ko] of REASONS_KO) if (pattern.test(why)) return why.replace(pattern, ko);
    return e.message;
  }

  function showError(form, e) {
    const key = (e.field || (e.code === 'invalid_room_id' ? 'id' : '')).split('.')[0];
    let slot = key && form.querySelector('p[data-err="' + key + '"]');
    if (!slot) slot = form.querySelector('p[data-err=""]');
    slot.textContent = refusal(e);
    const bad = key ? form.querySelectorAll('[data-errkey="' + key + '"]') : [];
    bad.forEach((i) => i.setAttribute('aria-invalid', 'true'));
    if (bad.length) bad[0].focus();
  }

  // withoutNulls drops the fields a PUT leaves to their defaults.
  const withoutNulls = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null));

  async function submit(form, kind, create) {
    clearErrors(form);
    const edits = form.dataset.edits; // an edit made while this save is on its way is not saved by it
    try {
      if (create) {
        const newID = form.querySelector('input[name=id]').value.trim();
        await api('PUT', PATHS[kind] + encodeURIComponent(newID), withoutNulls(formConfig(form, kind)));
        location.href = base + '/admin/' + kind + 's/' + encodeURIComponent(newID);
        return;
      }
      if (kind === 'room') {
        const cfg = formConfig(form, kind);
        await api('PATCH', PATHS.room + id, cfg);
        // The message is now what was sent: a save before the refresh fills the form again (a message
        // taken away a moment after it was said) must send its removal.
        if (cfg.page) markSaid(form, cfg.page.message);
      } else {
        // A PUT replaces the whole config: a drop's listed codes go with it, or it would hand out
        // generated ones instead.
        const whole = kind === 'drop' && current.listed ? (await api('GET', PATHS.drop + id + '/config')).config : current.config;
        await api('PUT', PATHS[kind] + id, withoutNulls(formConfig(form, kind, whole)));
      }
      // The form follows the entity again, unless the operator edited it meanwhile: the refresh would
      // put the saved config over that edit.
      if (form.dataset.edits === edits) form.dataset.dirty = '';
      say(t('saved'));
      refresh(true);
    } catch (e) {
      showError(form, e);
    }
  }

  function say(msg) { status.textContent = msg; }

  // ---- Charts: time on x, values on y, one polyline per series; drawn again at each refresh. ----
  const SVG = 'http://www.w3.org/2000/svg';
  const COLORS = ['#1a5fb4', '#c64600', '#1e7b34', '#8b2fc9'];
  const WINDOW = 15 * 60 * 1000;

  function svgEl(tag, attrs) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    return el;
  }

  function chart(key, title, series) {
    const fig = h('figure', { id: 'chart-' + key }, h('figcaption', { text: title }));
    const svg = svgEl('svg', { viewBox: '0 0 600 150', role: 'img', 'aria-label': title });
    fig.append(svg, h('div', { class: 'legend' }, ...series.map((s, i) =>
      h('span', {}, h('i', { style: null, 'data-color': i }), t(s.label)))));
    fig.querySelectorAll('.legend i').forEach((i) => { i.className = 'c' + i.dataset.color; });
    return { fig, svg, series, title };
  }

  // draw shows the points of the last WINDOW, or of the last two minutes while there are fewer, in
  // the chart's own width so that its text is not stretched.
  function draw(c, points) {
    const svg = c.svg;
    const W = Math.max(200, Math.round(svg.clientWidth || 600));
    svg.setAttribute('viewBox', '0 0 ' + W + ' 150');
    while (svg.firstChild) svg.firstChild.remove();
    const end = points.length ? Date.parse(points[points.length - 1].t) : Date.now();
    const first = points.length ? Date.parse(points[0].t) : end;
    const span = Math.min(WINDOW, Math.max(2 * 60 * 1000, end - first));
    const start = end - span;
    const shown = points.filter((p) => Date.parse(p.t) >= start);
    // The grid marks 0, half and all of the highest value shown (1 while there is none), with room above.
    let peak = 0;
    for (const p of shown) for (const s of c.series) peak = Math.max(peak, s.get(p));
    if (!(peak > 0)) peak = 1;
    const top = peak * 1.15;
    const x = (p) => 44 + ((Date.parse(p.t) - start) / span) * (W - 50);
    const y = (v) => 140 - (v / top) * 130;
    for (const frac of [0, 0.5, 1]) {
      const v = peak * frac;
      svg.append(svgEl('line', { x1: 44, x2: W - 4, y1: y(v), y2: y(v), stroke: '#e1e1e8', 'stroke-width': 1 }));
      const label = svgEl('text', { x: 40, y: y(v) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#5b5b66' });
      label.textContent = fmtNum(v);
      svg.append(label);
    }
    if (!shown.length) {
      const msg = svgEl('text', { x: W / 2, y: 58, 'text-anchor': 'middle', 'font-size': 13, fill: '#5b5b66' });
      msg.textContent = t('no_data');
      svg.append(msg);
    }
    c.series.forEach((s, i) => {
      const pts = shown.map((p) => x(p).toFixed(1) + ',' + y(s.get(p)).toFixed(1)).join(' ');
      svg.append(svgEl('polyline', { points: pts, fill: 'none', stroke: COLORS[i], 'stroke-width': 2, 'stroke-linejoin': 'round', class: 'series-' + s.label }));
    });
    const last = shown[shown.length - 1];
    svg.setAttribute('aria-label', c.title + (last ? ': ' + c.series.map((s) => t(s.label) + ' ' + fmtNum(s.get(last))).join(', ') : ''));
  }

  // ---- Pages ----
  let current = null; // the entity as last read
  let points = []; // its history, oldest first
  let charts = [];

  function card(k, v) {
    return h('div', { class: k === 'room_missing' ? 'card warn' : 'card', 'data-card': k },
      h('div', { class: String(v).length > 12 ? 'v long' : 'v', text: v }),
      h('div', { class: 'k', text: t(k) }));
  }

  function renderCards(items) {
    const el = document.getElementById('cards');
    el.replaceChildren(...items.map(([k, v]) => card(k, v)));
    el.querySelectorAll('.v').forEach(fit);
  }

  // fit makes a card's figure smaller, down to three quarters of its size, until it fits its card on
  // one line (₩1,250,000,000 at a phone's width broke before its last digit); what still does not fit
  // (a long visitor id) breaks at its size.
  function fit(v) {
    v.style.whiteSpace = 'nowrap';
    const full = parseFloat(getComputedStyle(v).fontSize);
    for (let s = full; v.scrollWidth > v.clientWidth && s > full * 0.75;) {
      s = Math.max(full * 0.75, s * 0.9);
      v.style.fontSize = s + 'px';
    }
    if (v.scrollWidth > v.clientWidth) {
      v.style.fontSize = '';
      v.style.whiteSpace = '';
    }
  }

  // siteTold is the state of the last webhook about an ended drop or auction, 'none' before one is
  // queued, '' without webhooks or while the record that keeps them fails.
  async function siteTold(kind, id) {
    const hooks = await api('GET', '/v1/webhooks?limit=1&' + kind + '=' + encodeURIComponent(id)).catch(() => null);
    return !hooks || !hooks.url ? '' : hooks.webhooks.length ? hooks.webhooks[0].state : 'none';
  }

  // roomMissing reports whether room, the room a drop or an auction sits behind, does not exist: nobody
  // can then be let in to claim or bid, and its visitors' page sends them to a line that is not there.
  // A drop may be made before its room, so this is a note, not a refusal.
  async function roomMissing(room) {
    if (!room) return false;
    return api('GET', '/v1/rooms/' + encodeURIComponent(room)).then(() => false, (e) => e.code === 'room_not_found');
  }

  // missingRoomCard is the card that says a sale's room is missing, none while it is there.
  const missingRoomCard = (cur) => (cur.room_missing ? [['room_missing', cur.config.room]] : []);

  // download links an export of the API, which the session reads as it reads the rest.
  const download = (path, label) => h('a', { href: base + path, download: '', id: 'ctl-' + label, class: 'download', text: t(label) });

  // twice makes a control that acts only on a second press within five seconds: the first one says so.
  // Once it acted it is disarmed, so that a third press asks again.
  function twice(label, confirm, cls, fn) {
    let disarm = 0;
    const b = control(label, cls, async () => {
      if (b.dataset.armed !== '1') {
        b.dataset.armed = '1';
        disarm = setTimeout(() => { b.dataset.armed = ''; b.textContent = t(label); }, 5000);
        return 'armed:' + confirm;
      }
      clearTimeout(disarm);
      b.dataset.armed = '';
      b.textContent = t(label);
      return fn();
    });
    return b;
  }

  // remove deletes the page's room, drop or auction, then shows the overview. A drop with claims and an
  // auction with bids or sold are kept, and their pages offer no delete; one whose first claim or bid
  // came after the page drew it is refused by the API, and the page says so.
  const remove = () => twice('delete', 'confirm_delete', 'danger', async () => {
    await api('DELETE', PATHS[page] + id);
    location.href = base + '/admin';
    return t('saved');
  });

  function control(label, cls, fn) {
    const b = h('button', { type: 'button', class: cls, id: 'ctl-' + label, text: t(label), onclick: async () => {
      b.disabled = true;
      try {
        const done = await fn();
        if (typeof done === 'string' && done.startsWith('armed:')) {
          b.textContent = t(done.slice(6));
          b.disabled = false;
          return;
        }
        say(typeof done === 'string' ? done : t('saved')); // a control may say what it did
      } catch (e) {
        say(refusal(e));
      }
      b.disabled = false;
      refresh(true);
    } });
    return b;
  }

  const PAGES = {
    room: {
      // A room that follows a drop admits nobody while the drop is closed: the card says so, from the
      // drop's public view (a drop that cannot be read leaves the room's own state).
      read: async () => {
        const r = await api('GET', '/v1/rooms/' + id);
        const drop = r.drop ? await api('GET', '/v1/drops/' + encodeURIComponent(r.drop)).catch(() => ({})) : {};
        return { config: r, stats: r.stats, dropStatus: drop.status };
      },
      charts: () => [
        chart('line', t('chart_line'), [{ label: 'waiting', get: (p) => p.waiting }, { label: 'active', get: (p) => p.active }]),
        chart('flow', t('chart_flow'), [{ label: 'joins_s', get: (p) => p.joins }, { label: 'admissions_s', get: (p) => p.admissions },
          { label: 'idle_s', get: (p) => p.idle_expiries }, { label: 'grace_s', get: (p) => p.grace_expiries }]),
        chart('eta', t('chart_eta'), [{ label: 'eta_back', get: (p) => p.eta_back / 60 }]),
      ],
      cards: (cur, last) => [['status', t(roomState(cur.config, cur.dropStatus))], ['waiting', fmtNum(cur.stats.waiting)],
        ['active', fmtNum(cur.stats.active)], ['admitted_total', fmtNum(cur.stats.admitted_total)],
        ['joins_s', fmtNum(last && last.joins)], ['admissions_s', fmtNum(last && last.admissions)],
        ['eta_back', (last && last.eta_back_bound ? '≤ ' : '') + fmtWait(last && last.eta_back)]]
        .concat(roomState(cur.config) === 'opens_later' ? [['opens', fmtTime(cur.config.opens_at)]] : []),
      controls: (cur) => {
        const pause = cur.config.paused
          ? control('resume', 'primary', () => api('PATCH', '/v1/rooms/' + id, { paused: false }))
          : control('pause', 'danger', () => api('PATCH', '/v1/rooms/' + id, { paused: true }));
        if (cur.config.entry !== 'invite') return [pause, remove()];
        // A line by invitation: codes pasted here, and the link each invitee gets.
        const codes = h('textarea', { id: 'invite-codes', rows: 3, 'aria-label': t('invite_codes'), placeholder: t('invite_codes') });
        const add = control('add_invites', '', async () => {
          const list = codes.value.split(/[\s,]+/).filter(Boolean);
          const r = await api('POST', '/v1/rooms/' + id + '/invites', { codes: list });
          codes.value = '';
          const link = location.origin + base + '/r/' + encodeURIComponent(id) + '?invite=CODE';
          if (!r.added) return t('invites_none');
          return t(r.added === 1 ? 'invites_added_one' : 'invites_added', { n: fmtNum(r.added), link });
        });
        return [pause, codes, add, remove()];
      },
    },
    drop: {
      // Each second without the listed codes, which may be a hundred thousand; a save reads them.
      // Over, whether the site was told how it ended (with --webhook-url): the webhook's state.
      read: async () => {
        const cur = await api('GET', '/v1/drops/' + id + '/config?codes=0');
        if (cur.status === 'closed' || cur.status === 'sold_out') cur.site_told = await siteTold('drop', id);
        if (!cur.followed_by) cur.room_missing = await roomMissing(cur.config.room); // a room that follows it is there
        return cur;
      },
      charts: () => [
        chart('stock', t('chart_stock'), [{ label: 'remaining', get: (p) => p.remaining }, { label: 'claimed', get: (p) => p.claimed }]),
        chart('claims', t('chart_claims'), [{ label: 'claims_s', get: (p) => p.claims }]),
      ],
      cards: (cur, last) => [['status', t(cur.status)], ['claimed', fmtNum(cur.claimed)], ['remaining', fmtNum(cur.remaining)],
        ['stock', fmtNum(cur.config.stock)], ['claims_s', fmtNum(last && last.claims)]]
        .concat(typeof cur.redeemed === 'number' ? [['redeemed', fmtNum(cur.redeemed)]] : []) // codes used at checkouts
        // When it opens, until it does, and when it closes, while that is to come; how many each may claim.
        .concat(cur.status === 'scheduled' ? [['opens', fmtTime(cur.config.opens_at)]] : [])
        .concat(cur.config.closes_at && cur.status !== 'sold_out' ? [['closes_at', fmtTime(cur.config.closes_at)]] : [])
        .concat(cur.config.per_visitor > 1 ? [['per_visitor', fmtNum(cur.config.per_visitor)]] : [])
        .concat(cur.site_told ? [['site_told', t('wh_' + cur.site_told)]] : [])
        .concat(cur.followed_by ? [['followed_by', cur.followed_by]] : [], missingRoomCard(cur)), // followed: no delete
      // A drop sold out is over whatever its times: opening or closing it changes nothing.
      controls: (cur) => (cur.status === 'sold_out' ? [] : [cur.status === 'open'
        ? control('close_now', 'danger', () => api('POST', '/v1/drops/' + id + '/close'))
        : control('open_now', 'primary', () => api('POST', '/v1/drops/' + id + '/open'))]).concat(cur.claimed > 0 || cur.followed_by ? [] : remove(),
        viewer ? [] : download('/v1/drops/' + id + '/claims.csv', 'export_claims')),
    },
    auction: {
      // Over, whether the site was told how it ended (with --webhook-url): the webhook's state.
      read: async () => {
        const cur = await api('GET', '/v1/auctions/' + id + '/config');
        if (cur.status === 'closed' || cur.status === 'sold') cur.site_told = await siteTold('auction', id);
        cur.room_missing = await roomMissing(cur.config.room);
        return cur;
      },
      charts: () => [
        chart('price', t('chart_price'), [{ label: 'price', get: (p) => p.price }]),
        chart('bids', t('chart_bids'), [{ label: 'bids_s', get: (p) => p.bids }, { label: 'bidders', get: (p) => p.bidders }]),
      ],
      cards: (cur, last) => [['status', t(cur.status)], ['price', fmtMoney(cur.price, cur.config.currency)],
        ['bids', fmtNum(cur.bids)], ['bidders', fmtNum(last && last.bidders)], ['ends', fmtTime(cur.ends_at)],
        // Over, who won it (the buyer of a sale, who never led), or nobody; until then who leads.
        cur.status === 'closed' || cur.status === 'sold' ? ['winner', cur.winner || '–'] : ['leader', cur.leader || '–']]
        .concat(cur.config.reserve_price ? [['reserve', t(cur.reserve_met ? 'reserve_yes' : 'reserve_no')]] : [])
        .concat(cur.site_told ? [['site_told', t('wh_' + cur.site_told)]] : [])
        .concat(missingRoomCard(cur)),
      controls: (cur) => {
        const history = download('/v1/auctions/' + id + '/events.csv', 'export_events');
        const kept = cur.bids > 0 || cur.status === 'sold'; // the API keeps it: no delete to offer
        if (cur.status === 'closed' || cur.status === 'sold') return (kept ? [] : [remove()]).concat(history);
        const by = h('input', { id: 'extend-by', value: '5m', size: 5, 'aria-label': t('extend') });
        const end = twice('end_now', 'confirm_end', 'danger', () => api('POST', '/v1/auctions/' + id + '/end'));
        return [end, control('extend', '', () => api('POST', '/v1/auctions/' + id + '/extend', { by: by.value })), by]
          .concat(kept ? [] : [remove()], history);
      },
    },
  };

  // An entity's page shows its own changes; the overview everybody's, each naming what it changed.
  const auditPath = '/v1/audit?limit=20' + (page === 'overview' ? '' : '&kind=' + page + '&id=' + id);
  const KINDS = { room: 'rooms', drop: 'drops', auction: 'auctions' };
  const what = (e) => (page !== 'overview' ? []
    : [h('span', { class: 'muted', text: t('kind_' + e.kind) + ' ' }),
      KINDS[e.kind] ? h('a', { href: base + '/admin/' + KINDS[e.kind] + '/' + encodeURIComponent(e.id), text: e.id }) : h('span', { text: e.id }), ' '] );

  // The audit log shows its newest page, read again every few seconds, and the older pages the operator
  // asked for with the button under it; an entry the newest page has reached is shown once.
  const audit = { newest: [], older: [], next: '' };
  function renderAudit() {
    const seen = new Set();
    const entries = audit.newest.concat(audit.older).filter((e) => !seen.has(e.cursor) && seen.add(e.cursor));
    const ol = document.getElementById('audit');
    let more = document.getElementById('audit-older');
    if (!more) {
      more = h('button', { type: 'button', id: 'audit-older', text: t('older'), onclick: olderAudit });
      ol.after(more);
    }
    more.hidden = !audit.next;
    if (!entries.length) {
      ol.replaceChildren(h('li', { class: 'muted', text: t('none') }));
      return;
    }
    ol.replaceChildren(...entries.map((e) => h('li', {}, h('time', { datetime: e.at, text: fmtTime(e.at) }), ' — ', ...what(e),
      h('strong', { text: t('act_' + e.action) }), ' ', h('span', { class: 'by', text: e.by ? t('by', { name: e.by }) : t('by_rushgate') }),
      e.changes.length ? ': ' : '',
      ...e.changes.flatMap((c, i) => [i ? ', ' : '', h('code', { text: c.field }), ' ' + change(c.field, c.old) + ' → ' + change(c.field, c.new)]))));
  }

  async function olderAudit() {
    try {
      const r = await api('GET', auditPath + '&before=' + encodeURIComponent(audit.next));
      audit.older = audit.older.concat(r.entries);
      audit.next = r.next_before || '';
      renderAudit();
    } catch (e) {
      say(refusal(e));
    }
  }

  // A code a customer presents: which claim handed it out (what a site's checkout asks, asked by hand).
  const lookup = document.getElementById('find-code');
  if (lookup) lookup.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const out = document.getElementById('found');
    const code = lookup.elements.code.value.trim();
    if (!code) {
      out.textContent = t('code_empty');
      return;
    }
    try {
      showCode(out, code, await api('GET', codePath(code)));
    } catch (e) {
      out.textContent = refusal(e);
    }
  });
  const codePath = (code) => '/v1/drops/' + id + '/codes/' + encodeURIComponent(code);

  // showCode says which claim handed out a code and whether the code was used; an unused one gets a
  // control that marks it used, a used one a control that makes it usable again (its order was
  // cancelled), each on a second press as other lasting acts (what a checkout does by API).
  function showCode(out, code, c) {
    const used = c.redeemed_at ? t(c.order ? 'code_used_order' : 'code_used', { at: fmtTime(c.redeemed_at), order: c.order }) : t('code_unused');
    out.replaceChildren(t('code_found', { seq: fmtNum(c.seq), visitor: c.visitor, at: fmtTime(c.claimed_at) }) + ' ' + used);
    if (c.redeemed_at) {
      out.append(' ', twice('unredeem', 'confirm_unredeem', '', async () => {
        showCode(out, code, await api('POST', codePath(code) + '/unredeem', { order: c.order || '' }));
        return t('unredeemed');
      }));
      return;
    }
    out.append(' ', twice('mark_used', 'confirm_mark_used', '', async () => {
      try {
        showCode(out, code, await api('POST', codePath(code) + '/redeem', {}));
      } catch (e) {
        if (e.code === 'code_redeemed') showCode(out, code, await api('GET', codePath(code))); // by a checkout meanwhile
        throw e;
      }
      return t('marked_used');
    }));
  }

  let controlsKey = '';
  let auditAt = 0;

  // refreshAudit reads the entity's newest changes, every five seconds or when forced (a control was
  // pressed), unless a later refresh started meanwhile.
  async function refreshAudit(force, stale) {
    if (!force && Date.now() - auditAt <= 5000) return;
    auditAt = Date.now();
    const r = await api('GET', auditPath);
    if (stale()) return;
    audit.newest = r.entries;
    if (!audit.older.length) audit.next = r.next_before || '';
    renderAudit();
  }

  // refreshEntity shows the entity as read now, unless a later refresh started while it read (a control
  // pressed during the second's refresh): it would put back the state from before the press, and add
  // the history's last points a second time.
  async function refreshEntity(force, stale) {
    const p = PAGES[page];
    const cur = await p.read();
    const path = PATHS[page] + id + '/history' + (points.length ? '?since=' + encodeURIComponent(points[points.length - 1].t) : '');
    const hist = await api('GET', path);
    if (stale()) return;
    current = cur;
    points = points.concat(hist.samples);
    const cutoff = Date.parse(hist.now) - 2 * WINDOW;
    points = points.filter((x) => Date.parse(x.t) >= cutoff);
    const last = points[points.length - 1];
    renderCards(p.cards(cur, last));
    // The controls change with the status, a room's pause and entry, and a first claim or bid or a room
    // that follows a drop (no delete).
    const key = JSON.stringify([cur.status, cur.config && cur.config.paused, cur.config && cur.config.entry, cur.claimed > 0 || cur.bids > 0,
      cur.followed_by]);
    if (key !== controlsKey) {
      controlsKey = key;
      // The page visitors see, to open beside the console or to send out.
      const visitors = h('a', { href: base + '/' + page[0] + '/' + encodeURIComponent(id), target: '_blank', rel: 'noopener',
        id: 'visitor-page', class: 'download', text: t('visitor_page') });
      document.getElementById('controls').replaceChildren(...p.controls(cur), visitors);
    }
    charts.forEach((c) => draw(c, points));
    await refreshAudit(force, stale);
    if (stale()) return;
    // The form follows the entity until the operator starts editing it, so that saving it never undoes
    // a change made since (a pause, another operator's edit).
    const form = document.getElementById('edit');
    const cfg = JSON.stringify(cur.config);
    if (form.dataset.dirty !== '1' && form.dataset.shown !== cfg) {
      form.dataset.shown = cfg;
      fill(form, cur.config);
    }
    if (page === 'drop' && !viewer) keepFixed(form, cur.claimed > 0, FIXED.drop, 'fixed_note');
    if (page === 'auction' && !viewer) keepFixed(form, cur.bids > 0 || cur.status === 'sold', FIXED.auction, 'fixed_note_auction');
  }

  // keepFixed leaves a drop with claims, or an auction with bids, only what may change once they were
  // made under the rest (a drop's title, message, stock, times and claims per visitor; an auction's
  // title and message), and says so.
  const FIXED = {
    drop: ['room', 'identity', 'release_on_claim'],
    auction: FIELDS.auction.map(([name]) => name).filter((name) => name !== 'title' && name !== 'message'),
  };
  function keepFixed(form, started, fixed, why) {
    for (const name of fixed) form.querySelector('[name=' + name + ']').disabled = started;
    let note = form.querySelector('.fixed-note');
    if (!note) {
      note = h('p', { class: 'hint wide fixed-note', id: 'fixed-note', text: t(why) });
      form.prepend(note);
    }
    note.hidden = !started;
  }

  // row is a line of an overview's table: the id links the entity's page, its title (if any) follows.
  function row(href, cells, title) {
    return h('tr', {}, h('td', {}, h('a', { href, text: cells[0] }), title ? h('span', { class: 'muted', text: ' ' + title }) : null),
      ...cells.slice(1).map((c) => h('td', {}, c)));
  }

  // suggestIDs offers the rooms and drops there are where a form names one (a drop's or an auction's
  // room, a room's drop), once per page load; a name typed by hand still goes.
  async function suggestIDs() {
    for (const [kind, names] of [['rooms', ['room']], ['drops', ['drop']]]) {
      let list;
      try {
        list = (await api('GET', '/v1/' + kind + '?limit=500'))[kind] || [];
      } catch (_) {
        continue;
      }
      const dl = h('datalist', { id: 'known-' + kind }, ...list.map((x) => h('option', { value: x.id })));
      document.body.append(dl);
      names.forEach((n) => document.querySelectorAll('form.edit input[name=' + n + ']').forEach((i) => i.setAttribute('list', dl.id)));
    }
  }

  // The overview lists the first 200 of each kind, in id order, and 200 more at each press of the
  // button under a table whose list goes on (it listed the first 200 and no more); each refresh reads
  // as many as it shows.
  const shown = { rooms: 200, drops: 200, auctions: 200 };
  // The ids that part of the store could not read (a Cluster master down) count as shown, and are
  // named under the table.
  async function listed(kind) {
    const items = [];
    const unavailable = [];
    let after = '';
    do {
      const page = await api('GET', '/v1/' + kind + '?limit=' + Math.min(500, shown[kind] - items.length - unavailable.length) + '&after=' + encodeURIComponent(after));
      items.push(...(page[kind] || []));
      unavailable.push(...(page.unavailable || []));
      after = page.next_after || '';
    } while (after && items.length + unavailable.length < shown[kind]);
    return { items, unavailable, more: after !== '' };
  }
  document.querySelectorAll('button.more').forEach((b) => b.addEventListener('click', () => {
    shown[b.dataset.kind] += 200;
    refresh();
  }));

  // refreshOverview fills the tables, unless a later refresh started while it read (a press of "Show
  // more" during the second's refresh): what it read is then older than what that one shows.
  async function refreshOverview(stale) {
    // The webhooks are read from the SQL record: while it fails (the banner says so), the rest still shows.
    const backups = document.getElementById('backup-section');
    const ops = document.getElementById('operators-section');
    const [rooms, drops, auctions, hooks, kept, team] = await Promise.all([listed('rooms'), listed('drops'), listed('auctions'),
      api('GET', '/v1/webhooks?limit=20').catch(() => null), backups ? api('GET', '/v1/backups').catch(() => null) : null,
      ops ? api('GET', '/v1/operators').catch(() => null) : null]);
    if (stale()) return;
    if (hooks) showWebhooks(hooks);
    if (kept) showBackups(kept);
    if (team) showOperators(team.operators);
    // The changes are read from the SQL record too: while it fails, the rest of the overview still shows.
    await refreshAudit(false, stale).catch(() => {});
    const fill = (tableID, list, make) => {
      const tbody = document.querySelector('#' + tableID + ' tbody');
      tbody.replaceChildren(...(list.items.length ? list.items.map(make) : [h('tr', {}, h('td', { class: 'empty', colspan: 6, text: t('none') }))]));
      document.getElementById(tableID + '-more').hidden = !list.more;
      const missing = document.getElementById(tableID + '-unavailable');
      missing.hidden = !list.unavailable.length;
      missing.textContent = list.unavailable.length ? t('unavailable_list', { ids: list.unavailable.join(', ') }) : '';
    };
    // The drops listed say which rooms their closing holds (a room's drop past the first page, none).
    const dropStatus = new Map(drops.items.map((d) => [d.id, d.status]));
    fill('rooms', rooms, (r) => row(base + '/admin/rooms/' + r.id, [r.id, badge(roomState(r.config, dropStatus.get(r.config.drop))),
      fmtNum(r.stats.waiting), fmtNum(r.stats.active), fmtNum(r.stats.admitted_total),
      [r.config.capacity ? '≤ ' + r.config.capacity : '', r.config.rate ? r.config.rate.admits + '/' + r.config.rate.per : ''].filter(Boolean).join(' · ')], r.config.page && r.config.page.title));
    fill('drops', drops, (d) => row(base + '/admin/drops/' + d.id, [d.id, badge(d.status), fmtNum(d.claimed), fmtNum(d.remaining),
      fmtTime(d.config.opens_at)], d.config.title));
    fill('auctions', auctions, (a) => row(base + '/admin/auctions/' + a.id, [a.id, badge(a.status), fmtMoney(a.price, a.config.currency),
      fmtNum(a.bids), fmtTime(a.ends_at)], a.config.title));
  }

  // showWebhooks lists the last webhooks and how each went, when rushgate sends them (--webhook-url):
  // where an operator sees that the site was told who won, or why it was not.
  function showWebhooks(hooks) {
    document.getElementById('webhooks-section').hidden = !hooks.url && !hooks.webhooks.length;
    document.getElementById('webhooks-url').textContent = hooks.url ? t('webhooks_to', { url: hooks.url }) : '';
    document.getElementById('webhook-ping').hidden = !hooks.url;
    const rows = hooks.webhooks.map((w) => {
      const data = (w.payload && w.payload.data) || {}; // the event as the site gets it
      const [kind, of] = data.auction ? ['auction', data.auction] : data.drop ? ['drop', data.drop] : [];
      const what = of
        ? h('td', {}, h('a', { href: base + '/admin/' + kind + 's/' + encodeURIComponent(of), text: of }), h('span', { class: 'muted', text: ' ' + t('wh_' + kind + '_ended') }))
        : h('td', { text: w.type === 'ping' ? t('wh_ping') : w.id });
      const detail = w.state === 'delivered' ? t('wh_sent_at', { at: fmtTime(w.sent_at) })
        : [w.last_error ? t('wh_last_error', { error: w.last_error }) : t('wh_never'), w.state === 'pending' && w.due_at ? t('wh_next', { at: fmtTime(w.due_at) }) : '']
          .filter(Boolean).join(' ');
      // One waiting for its next try, or given up, is sent at once on a press: the site is back.
      const send = w.state === 'delivered' ? null : h('button', { type: 'button', class: 'send-now', text: t('wh_send_now'), onclick: async (ev) => {
        ev.target.disabled = true;
        try {
          await api('POST', '/v1/webhooks/' + encodeURIComponent(w.id) + '/send');
          say(t('wh_sending'));
        } catch (e) {
          say(refusal(e));
        }
        refresh();
      } });
      return h('tr', {}, what, h('td', {}, h('span', { class: 'badge wh-' + w.state, text: t('wh_' + w.state) })),
        h('td', { text: fmtNum(w.attempts) }), h('td', { class: 'detail' }, detail, send ? ' ' : null, send));
    });
    document.querySelector('#webhooks tbody').replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { class: 'empty', colspan: 4, text: t('none') }))]));
  }

  // Every room paused at once, or resumed, by two presses: what an operator does when the site behind
  // the rooms falls over, rather than a room at a time. Each room is its own change in the audit log.
  // A room that part of the store cannot read or change (a Cluster master down) does not stop the
  // others: the message names it.
  async function everyRoom(paused) {
    let n = 0;
    const unreached = [];
    let after = '';
    do {
      const page = await api('GET', '/v1/rooms?limit=500&after=' + encodeURIComponent(after));
      unreached.push(...(page.unavailable || []));
      for (const r of page.rooms || []) {
        if (!!r.config.paused === paused) continue;
        try {
          await api('PATCH', '/v1/rooms/' + encodeURIComponent(r.id), { paused });
          n++;
        } catch (e) {
          if (e.code !== 'store_unavailable') throw e;
          unreached.push(r.id);
        }
      }
      after = page.next_after || '';
    } while (after);
    const done = t(paused ? 'paused_all' : 'resumed_all', { n: fmtNum(n) });
    return unreached.length ? done + ' ' + t('unreached_all', { ids: unreached.join(', ') }) : done;
  }
  const allRooms = document.getElementById('all-rooms');
  if (allRooms && !viewer) {
    allRooms.append(twice('pause_all', 'confirm_pause_all', 'danger', () => everyRoom(true)),
      twice('resume_all', 'confirm_resume_all', '', () => everyRoom(false)));
  }

  // showOperators lists the operators, each with a delete that acts on a second press; the table is
  // built again only when the list changed, so that a press armed stays armed across refreshes.
  let operatorsShown = '';
  function showOperators(list) {
    // Drawn again when the list changes, or a key in it expires.
    const json = JSON.stringify(list) + list.filter((o) => o.expires_at && Date.parse(o.expires_at) <= Date.now()).length;
    if (json === operatorsShown) return;
    operatorsShown = json;
    const rows = list.map((o) => {
      const del = twice('delete', 'confirm_delete', 'danger', async () => {
        await api('DELETE', '/v1/operators/' + encodeURIComponent(o.name));
        return t('operator_removed', { name: o.name });
      });
      del.id = 'op-delete-' + o.name;
      del.setAttribute('aria-label', t('delete') + ' ' + o.name);
      const until = !o.expires_at ? t('life_ever') : Date.parse(o.expires_at) <= Date.now() ? null : fmtTime(o.expires_at);
      // The role changes in place, the key kept: a viewer promoted for the evening, an editor held back.
      const role = h('select', { id: 'op-role-' + o.name, 'aria-label': t('op_role') + ' ' + o.name, onchange: async (ev) => {
        try {
          await api('PATCH', '/v1/operators/' + encodeURIComponent(o.name), { role: ev.target.value });
          say(t('saved'));
        } catch (e) {
          // The role stays what the API holds: the list did not change, so the table is not drawn again.
          ev.target.value = o.role;
          say(refusal(e));
        }
        refresh();
      } }, ...['editor', 'viewer'].map((r) => h('option', { value: r, text: t('role_' + r), selected: r === o.role })));
      return h('tr', {}, h('td', { text: o.name }), h('td', {}, role), h('td', { text: fmtTime(o.created_at) }),
        h('td', {}, until === null ? badge('op_expired') : until), h('td', {}, del));
    });
    document.querySelector('#operators tbody').replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { class: 'empty', colspan: 5, text: t('op_none') }))]));
  }
  const newOperator = document.getElementById('new-operator');
  if (newOperator) {
    newOperator.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const err = document.getElementById('new-operator-err');
      const out = document.getElementById('operator-key');
      const name = newOperator.elements.name.value.trim();
      err.textContent = '';
      out.hidden = true;
      try {
        const life = newOperator.elements.life.value;
        const op = await api('POST', '/v1/operators', Object.assign({ name, role: newOperator.elements.role.value }, life ? { expires_in: life } : {}));
        out.replaceChildren(t('operator_key', { name: op.name, key: '' }), h('code', { id: 'new-key', text: op.key }));
        out.hidden = false;
        newOperator.reset();
        refresh();
      } catch (e) {
        err.textContent = e.code === 'invalid_request' ? t('op_name_rule') : refusal(e);
        newOperator.elements.name.focus();
      }
    });
  }

  // showBackups says what --backup-dir keeps, and when the last backup failed if none was taken since:
  // where an operator sees that the nightly backups stopped, and why.
  function showBackups(st) {
    const sched = st.schedule;
    const newest = sched && sched.kept[0];
    document.getElementById('backup-kept').textContent = (!sched ? t('backup_unscheduled')
      : !newest ? t('backup_kept_none', { every: fmtWait(sched.every_seconds), dir: sched.dir })
        : t('backup_kept', { every: fmtWait(sched.every_seconds), dir: sched.dir, count: fmtNum(sched.kept.length), name: newest.name,
          size: fmtSize(newest.bytes), at: fmtTime(newest.taken_at) })) + (st.encrypted ? ' ' + t('backup_sealed') : '');
    const failed = document.getElementById('backup-failed');
    failed.hidden = !st.last_failed_at || (st.last_taken_at && Date.parse(st.last_taken_at) > Date.parse(st.last_failed_at));
    failed.textContent = failed.hidden ? '' : t('backup_failed', { at: fmtTime(st.last_failed_at), error: st.failure });
  }
  // fmtSize shows a size in bytes in its largest unit, in the page's language ("3.1MB").
  function fmtSize(n) {
    const [v, unit] = n < 1e3 ? [n, 'byte'] : n < 1e6 ? [n / 1e3, 'kilobyte'] : n < 1e9 ? [n / 1e6, 'megabyte'] : [n / 1e9, 'gigabyte'];
    return v.toLocaleString(lang, { style: 'unit', unit, unitDisplay: 'narrow', maximumFractionDigits: 1 });
  }

  // A test event checks the site's endpoint, and its secret, before an auction ends.
  const ping = document.getElementById('webhook-ping');
  if (ping) {
    ping.addEventListener('click', async () => {
      ping.disabled = true;
      try {
        await api('POST', '/v1/webhooks/ping');
        say(t('wh_ping_sent'));
      } catch (e) {
        say(refusal(e));
      }
      ping.disabled = false;
      refresh();
    });
  }

  // refreshHealth shows what /healthz reports when it is not "ok": which store fails, and what that
  // does to visitors. Its reason (a driver's message) stays in the logs and on /healthz, but for the
  // nodes of a Redis that may evict keys, which the operator must set right, and the Cluster masters
  // that do not answer. Below it, a note names the masters that keep no append-only file, which
  // /healthz does not count as degraded.
  const health = document.getElementById('health');
  const healthNote = document.getElementById('health-note'); // masters without an append-only file: a note, not an alarm
  async function refreshHealth() {
    let hz;
    try {
      hz = await (await fetch(base + '/healthz', { credentials: 'same-origin' })).json();
    } catch (_) {
      return; // unreachable: refresh says so
    }
    const key = hz.status === 'ok' ? '' : hz.store === 'refuses writes' ? 'health_store_full'
      : hz.store === 'replicas behind' ? 'health_replicas' : hz.store === 'may evict keys' ? 'health_evicting'
        : hz.store === 'partly unreachable' ? 'health_store_part' : hz.store ? 'health_store'
          : hz.status === 'degraded' ? 'health_record_outbox' : 'health_record';
    health.hidden = !key;
    const waiting = hz.waiting ? ' ' + t('health_waiting', { claims: fmtNum(hz.waiting.claims), events: fmtNum(hz.waiting.events) }) : '';
    const nodes = !hz.reason ? ''
      : key === 'health_evicting' ? ' ' + t('health_evicting_nodes', { nodes: hz.reason.replace(/^maxmemory-policy: /, '') })
        : key === 'health_store_part' ? ' ' + t('health_store_part_nodes', { nodes: hz.reason }) : '';
    health.textContent = key ? t(key) + waiting + nodes : '';
    health.dataset.state = hz.status;
    const unlogged = Array.isArray(hz.unlogged) ? hz.unlogged : [];
    healthNote.hidden = unlogged.length === 0;
    healthNote.textContent = unlogged.length ? t('health_unlogged', { nodes: unlogged.join(', ') }) : '';
  }

  let timer = 0;
  let generation = 0; // of the latest refresh: only it fills the overview and sets the next one's timer
  async function refresh(force) {
    clearTimeout(timer);
    const mine = ++generation;
    const stale = () => mine !== generation;
    refreshHealth();
    try {
      if (page === 'overview') await refreshOverview(stale);
      else await refreshEntity(force, stale);
      if (stale()) return; // a later refresh shows newer, and sets the next one's timer
      if (status.textContent === t('offline') || body.dataset.gone) say('');
      body.dataset.gone = '';
      body.dataset.updated = new Date().toISOString();
    } catch (e) {
      if (stale()) return;
      // An entity deleted (here or elsewhere), or never made: its figures, controls and form go, which
      // stayed as last read under "It no longer exists."; its changes stay, which say who deleted it.
      const gone = page !== 'overview' && /_not_found$/.test(e.code || '');
      if (gone && !body.dataset.gone) {
        body.dataset.gone = '1';
        try { await refreshAudit(true, stale); } catch (_) { /* the next refresh tries again */ }
      }
      say(e.code ? refusal(e) : t('offline'));
    }
    timer = setTimeout(refresh, 1000);
  }

  document.querySelectorAll('form.edit').forEach(buildForm);
  suggestIDs();
  if (page !== 'overview') {
    charts = PAGES[page].charts();
    document.getElementById('charts').replaceChildren(...charts.map((c) => c.fig));
  }
  refresh('first');
})();
